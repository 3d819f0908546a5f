package local_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/local"
)

// Peek answers what Apply would, keeping no state for a new key; Reset forgets a key.
func ExampleStore_Peek() {
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := local.New(local.WithClock(clk))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	ctx := context.Background()
	rule := algo.SlidingWindowLog{Limit: 2, Window: time.Second}
	one := algo.Request{N: 1}

	d, _ := s.Peek(ctx, "user:42", rule, one)
	fmt.Println("peek new key:", d.Allowed, d.Remaining, "entries:", s.Len())
	_, _ = s.Apply(ctx, "user:42", rule, algo.Request{N: 2})
	d, _ = s.Peek(ctx, "user:42", rule, one)
	fmt.Println("peek after 2:", d.Allowed, d.RetryAfter)
	_ = s.Reset(ctx, "user:42", rule)
	fmt.Println("entries after Reset:", s.Len())
	// Output:
	// peek new key: true 2 entries: 0
	// peek after 2: false 1s
	// entries after Reset: 0
}
