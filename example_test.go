package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// The examples run on a fake clock so their output is exact; in production, leave out the
// WithClock options and time is real.
func exampleClock() *clockx.Fake {
	return clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
}

func Example() {
	clk := exampleClock()
	st, err := local.New(local.WithClock(clk))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	// 2 requests per second per user, in bursts of up to 3.
	l, err := limiter.New(st, algo.TokenBucket{Rate: 2, Burst: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for i := 1; i <= 4; i++ {
		d, err := l.Allow(ctx, "user:42")
		if err != nil {
			fmt.Println(err)
			return
		}
		if d.Allowed {
			fmt.Printf("request %d: allowed, %d of %d left\n", i, d.Remaining, d.Limit)
		} else {
			fmt.Printf("request %d: denied, retry after %v\n", i, d.RetryAfter)
		}
	}
	d, _ := l.Allow(ctx, "user:7") // every key has its own bucket
	fmt.Println("another user:", d.Allowed)
	// Output:
	// request 1: allowed, 2 of 3 left
	// request 2: allowed, 1 of 3 left
	// request 3: allowed, 0 of 3 left
	// request 4: denied, retry after 500ms
	// another user: true
}

func ExampleLimiter_Reserve() {
	clk := exampleClock()
	st, err := local.New(local.WithClock(clk))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	l, _ := limiter.New(st, algo.GCRA{Rate: 4, Burst: 1}, limiter.WithClock(clk))
	ctx := context.Background()

	for i := 1; i <= 3; i++ {
		r, err := l.Reserve(ctx, "job", 1, time.Second)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("reservation %d: ok=%v, delay %v\n", i, r.OK(), r.Delay())
		if i == 3 {
			// Changed our mind: give the permit back to the jobs behind us.
			_ = r.Cancel(ctx)
		}
	}
	r, _ := l.Reserve(ctx, "job", 1, time.Second)
	fmt.Println("after cancel, the next one waits", r.Delay())
	_ = r.Wait(ctx) // sleeps on the (fake) clock
	fmt.Println("waited", clk.Now().Sub(exampleClock().Now()))
	// Output:
	// reservation 1: ok=true, delay 0s
	// reservation 2: ok=true, delay 250ms
	// reservation 3: ok=true, delay 500ms
	// after cancel, the next one waits 500ms
	// waited 500ms
}

func ExampleLimiter_Wait() {
	clk := exampleClock()
	st, err := local.New(local.WithClock(clk))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	// A leaky bucket spaces requests evenly: one every 100ms.
	l, _ := limiter.New(st, algo.LeakyBucket{Rate: 10, Capacity: 5}, limiter.WithClock(clk))
	ctx := context.Background()
	t0 := clk.Now()
	for i := 1; i <= 3; i++ {
		if err := l.Wait(ctx, "crawler"); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("request %d sent at +%v\n", i, clk.Now().Sub(t0))
	}
	if err := l.WaitN(ctx, "crawler", 6); errors.Is(err, limiter.ErrExceedsLimit) {
		fmt.Println("6 at once can never fit in a bucket of 5")
	}
	// Output:
	// request 1 sent at +0s
	// request 2 sent at +100ms
	// request 3 sent at +200ms
	// 6 at once can never fit in a bucket of 5
}

func ExampleLimiter_TryAcquire() {
	clk := exampleClock()
	st, err := local.New(local.WithClock(clk))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	l, _ := limiter.New(st, algo.TokenBucket{Rate: 1, Burst: 1}, limiter.WithClock(clk))
	ctx := context.Background()

	ok, _ := l.TryAcquire(ctx, "k", 1, 0)
	fmt.Println("first, no waiting:", ok)
	ok, _ = l.TryAcquire(ctx, "k", 1, 100*time.Millisecond)
	fmt.Println("second, waiting up to 100ms:", ok)
	ok, _ = l.TryAcquire(ctx, "k", 1, 2*time.Second)
	fmt.Println("second, waiting up to 2s:", ok, "after", clk.Now().Sub(exampleClock().Now()))
	// Output:
	// first, no waiting: true
	// second, waiting up to 100ms: false
	// second, waiting up to 2s: true after 1s
}

// downStore is a store.Store whose backend is unreachable.
type downStore struct{}

func (downStore) Apply(context.Context, string, algo.Algorithm, algo.Request) (algo.Decision, error) {
	return algo.Decision{}, fmt.Errorf("dial tcp 10.0.0.7:6379: connection refused: %w", store.ErrUnavailable)
}

func (downStore) Refund(context.Context, string, algo.Algorithm, int64, int64) error {
	return store.ErrUnavailable
}

func (downStore) Close() error { return nil }

func ExampleFailOpen() {
	l, _ := limiter.New(downStore{}, algo.TokenBucket{Rate: 10, Burst: 10},
		limiter.WithFailurePolicy(limiter.FailOpen),
		limiter.WithErrorHandler(func(key string, err error) {
			fmt.Printf("rate limiter unavailable for %s: %v\n", key, err)
		}))
	ctx := context.Background()

	// Under FailOpen, decide on the Decision: it is allowed although err is not nil.
	d, err := l.Allow(ctx, "user:42")
	fmt.Println("allowed:", d.Allowed, "unavailable:", errors.Is(err, store.ErrUnavailable))

	// Wait and TryAcquire proceed at once; only the error handler sees the failure.
	fmt.Println("wait:", l.Wait(ctx, "user:42"))
	// Output:
	// rate limiter unavailable for user:42: dial tcp 10.0.0.7:6379: connection refused: limiter: store unavailable
	// allowed: true unavailable: true
	// rate limiter unavailable for user:42: dial tcp 10.0.0.7:6379: connection refused: limiter: store unavailable
	// wait: <nil>
}
