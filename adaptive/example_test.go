package adaptive_test

import (
	"context"
	"errors"
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
	a, _ := l.Acquire(ctx)
	b, _ := l.Acquire(ctx)
	if _, err := l.Acquire(ctx); errors.Is(err, adaptive.ErrLimitReached) {
		fmt.Println("third request shed: answer 503")
	}
	clk.Add(20 * time.Millisecond)
	a.Done(adaptive.Success) // fast, and the limit was reached: it grows
	b.Done(adaptive.Success)
	fmt.Println("limit after two fast successes:", l.Limit())
	c, _ := l.Acquire(ctx)
	clk.Add(150 * time.Millisecond)
	c.Done(adaptive.Success) // slower than Timeout: a drop
	fmt.Println("limit after a slow one:", l.Limit())
	// Output:
	// third request shed: answer 503
	// limit after two fast successes: 4
	// limit after a slow one: 3
}

// An Estimator is a deterministic function of its samples: a table of samples gives a
// table of limits.
func ExampleGradient() {
	e := adaptive.Gradient{Initial: 16}.NewEstimator()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, lat := range []time.Duration{100, 100, 100, 120, 200, 200, 100} {
		// One sample per round: each request starts after the previous round ended.
		s := adaptive.Sample{Start: t0.Add(time.Duration(i) * time.Second), Latency: lat * time.Millisecond, InFlight: 100}
		fmt.Printf("latency %v → limit %d\n", s.Latency, e.Update(s))
	}
	// Output:
	// latency 100ms → limit 20
	// latency 100ms → limit 24
	// latency 100ms → limit 29
	// latency 120ms → limit 28
	// latency 200ms → limit 26
	// latency 200ms → limit 23
	// latency 100ms → limit 28
}

// A load shedder driven by the process's load; tests inject the load.
func ExampleWithLoadShedding() {
	load := 0.95 // say, 95% CPU
	l, _ := adaptive.New(adaptive.Gradient{},
		adaptive.WithLoadShedding(adaptive.LoadFunc(func() float64 { return load }), 0.8))
	// In production: adaptive.WithLoadShedding(adaptive.SystemLoad(), 0.8).
	tok, err := l.Acquire(context.Background())
	fmt.Println(err) // no capacity estimate yet: nothing is shed on load alone
	tok.Done(adaptive.Success)
	// Output: <nil>
}
