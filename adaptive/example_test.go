package adaptive_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/limiter/adaptive"
	"github.com/ratekit/limiter/clockx"
)

// A limiter in front of a call: acquire, call, report. The fake clock plays the call's
// latency; in production leave out WithClock.
func Example() {
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l, err := adaptive.New(adaptive.AIMD{Initial: 2, Timeout: 100 * time.Millisecond}, adaptive.WithClock(clk))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	a, _, _ := l.TryAcquire(ctx)
	b, _, _ := l.TryAcquire(ctx)
	if _, ok, _ := l.TryAcquire(ctx); !ok {
		fmt.Println("third request shed: answer 503")
	}
	clk.Add(20 * time.Millisecond)
	a.Done(adaptive.Success) // fast, and the limit was reached: it grows
	b.Done(adaptive.Success)
	fmt.Println("limit after two fast successes:", l.Limit())
	c, _, _ := l.TryAcquire(ctx)
	clk.Add(150 * time.Millisecond)
	c.Done(adaptive.Success) // slower than Timeout: a drop
	fmt.Println("limit after a slow one:", l.Limit())
	// Output:
	// third request shed: answer 503
	// limit after two fast successes: 4
	// limit after a slow one: 3
}

// A load shedder driven by the process's load; tests inject the load.
func ExampleWithLoadShedding() {
	load := 0.95 // say, 95% CPU
	l, _ := adaptive.New(adaptive.Gradient{},
		adaptive.WithLoadShedding(func() float64 { return load }, 0.8))
	// In production: adaptive.WithLoadShedding(adaptive.SystemLoad(), 0.8).
	tok, ok, _ := l.TryAcquire(context.Background())
	fmt.Println(ok) // no capacity estimate yet: nothing is shed on load alone
	tok.Done(adaptive.Success)
	// Output: true
}
