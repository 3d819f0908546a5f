package local_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/local"
)

// A store used directly: three requests per second per key, on a virtual clock.
func ExampleNew() {
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := local.New(local.WithClock(clk), local.WithMaxKeys(100_000))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	rule := algo.FixedWindow{Limit: 3, Window: time.Second}
	for i := 0; i < 4; i++ {
		d, _ := s.Apply(context.Background(), "user:42", rule, algo.Request{N: 1})
		fmt.Println(d.Allowed, d.Remaining, d.RetryAfter)
	}
	clk.Add(time.Second) // the next window
	d, _ := s.Apply(context.Background(), "user:42", rule, algo.Request{N: 1})
	fmt.Println(d.Allowed, d.Remaining)
	// Output:
	// true 2 0s
	// true 1 0s
	// true 0 0s
	// false 0 1s
	// true 2
}
