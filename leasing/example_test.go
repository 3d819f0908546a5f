package leasing_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/leasing"
	"github.com/ratekit/limiter/local"
)

// A leasing store takes slices of 50 permits from the store below it (here an in-memory
// one; in production the Redis store of package distributed, shared by every process) and
// grants them locally: 120 requests cost 3 calls to it.
func Example() {
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	shared, err := local.New(local.WithClock(clk))
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := leasing.New(shared, 50, leasing.WithTTL(time.Second))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close() // gives back what the lease still holds, then closes shared

	rule := algo.FixedWindow{Limit: 1000, Window: time.Minute}
	ctx := context.Background()
	granted := 0
	for i := 0; i < 120; i++ {
		if d, err := s.Apply(ctx, "hot", rule, algo.Request{N: 1}); err == nil && d.Allowed {
			granted++
		}
	}
	p, _ := shared.Peek(ctx, "hot", rule, algo.Request{N: 1})
	fmt.Println("granted:", granted)
	fmt.Println("left in the shared store:", p.Remaining)
	// Output:
	// granted: 120
	// left in the shared store: 850
}
