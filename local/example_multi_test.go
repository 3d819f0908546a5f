package local_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/local"
)

// ApplyAll checks several rules on one key under one lock: all grant, or nothing is taken.
func ExampleStore_ApplyAll() {
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := local.New(local.WithClock(clk))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	rules := []algo.Algorithm{
		algo.TokenBucket{Rate: 100, Burst: 100},                        // 100 per second
		algo.Named(algo.TokenBucket{Rate: 200, Burst: 20}, "per100ms"), // 20 per 100 ms
	}
	ctx := context.Background()
	ds, ok, _ := s.ApplyAll(ctx, "api", rules, algo.Request{N: 20})
	fmt.Println(ok, ds[0].Remaining, ds[1].Remaining)
	ds, ok, _ = s.ApplyAll(ctx, "api", rules, algo.Request{N: 1})
	fmt.Println(ok, ds[1].RetryAfter)
	ds, ok, _ = s.ApplyAll(ctx, "api", rules[:1], algo.Request{N: 80}) // the first bucket lost nothing
	fmt.Println(ok, ds[0].Remaining)
	// Output:
	// true 80 0
	// false 5ms
	// true 0
}
