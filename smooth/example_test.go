package smooth_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/smooth"
)

// A SmoothBursty: each acquire pays for the one before it: the first is free, a large one is granted at
// once and the next caller waits for it. The fake clock makes the sleeps instant.
func ExampleNew() {
	ctx := context.Background()
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l, _ := smooth.New(algo.SmoothBursty{Rate: 5}, smooth.WithClock(clk)) // one permit every 200 ms
	for _, n := range []int64{1, 1, 10, 1} {
		waited, _ := l.Acquire(ctx, n)
		fmt.Printf("acquire(%d) waited %v\n", n, waited)
	}
	// After a second of idleness, a burst of up to 5 permits goes through at once.
	clk.Add(3 * time.Second)
	for _, n := range []int64{3, 2, 1, 1} {
		waited, _ := l.Acquire(ctx, n)
		fmt.Printf("acquire(%d) waited %v\n", n, waited)
	}
	// Output:
	// acquire(1) waited 0s
	// acquire(1) waited 200ms
	// acquire(10) waited 200ms
	// acquire(1) waited 2s
	// acquire(3) waited 0s
	// acquire(2) waited 0s
	// acquire(1) waited 0s
	// acquire(1) waited 200ms
}

// A SmoothWarmingUp starts cold, with permits up to 3 times further apart, and reaches
// its rate after the warm-up period of use; idle that long, it is cold again.
func ExampleNew_warmingUp() {
	ctx := context.Background()
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l, _ := smooth.New(algo.SmoothWarmingUp{Rate: 2, Warmup: 4 * time.Second}, smooth.WithClock(clk))
	for i := 0; i < 8; i++ {
		waited, _ := l.Acquire(ctx, 1)
		fmt.Print(waited, " ")
	}
	fmt.Println()
	// Output:
	// 0s 1.375s 1.125s 875ms 625ms 500ms 500ms 500ms
}

// TryAcquire takes permits only if they are usable within the timeout, and otherwise
// returns false at once without reserving anything.
func ExampleLimiter_TryAcquire() {
	ctx := context.Background()
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l, _ := smooth.New(algo.SmoothBursty{Rate: 5}, smooth.WithClock(clk))
	for _, timeout := range []time.Duration{0, 0, 100 * time.Millisecond, 200 * time.Millisecond} {
		ok, _ := l.TryAcquire(ctx, 1, timeout)
		fmt.Printf("tryAcquire(timeout %v) = %v\n", timeout, ok)
	}
	// Output:
	// tryAcquire(timeout 0s) = true
	// tryAcquire(timeout 0s) = false
	// tryAcquire(timeout 100ms) = false
	// tryAcquire(timeout 200ms) = true
}

// SetRate takes effect from the next reservation, which still pays for the previous one at
// the old rate.
func ExampleLimiter_SetRate() {
	ctx := context.Background()
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l, _ := smooth.New(algo.SmoothBursty{Rate: 1}, smooth.WithClock(clk))
	l.Acquire(ctx, 1)
	l.Acquire(ctx, 1)
	_ = l.SetRate(2)
	for _, n := range []int64{1, 2, 4, 1} {
		waited, _ := l.Acquire(ctx, n)
		fmt.Printf("acquire(%d) waited %v\n", n, waited)
	}
	fmt.Println("rate", l.Rate())
	// Output:
	// acquire(1) waited 1s
	// acquire(2) waited 500ms
	// acquire(4) waited 1s
	// acquire(1) waited 2s
	// rate 2
}

// Limiters on one key of one store are paced as a single limiter: here two in one
// process over a local store; over a distributed.Store, any number of processes.
func ExampleWithStore() {
	ctx := context.Background()
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st, err := local.New(local.WithClock(clk))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	a, _ := smooth.New(algo.SmoothBursty{Rate: 10}, smooth.WithClock(clk), smooth.WithStore(st, "api.example.com"))
	b, _ := smooth.New(algo.SmoothBursty{Rate: 10}, smooth.WithClock(clk), smooth.WithStore(st, "api.example.com"))
	for i := 0; i < 2; i++ {
		wa, _ := a.Acquire(ctx, 1)
		wb, _ := b.Acquire(ctx, 1)
		fmt.Println(wa, wb)
	}
	// Output:
	// 0s 100ms
	// 100ms 100ms
}
