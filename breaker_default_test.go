package limiter_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
)

// TestCircuitBreakerOnByDefault checks that a Limiter made without any breaker option
// has one, with CircuitBreaker's defaults (half of at least 20 calls within 1 s, a cool-
// down of 1 s): a dead store called 20 times within a second stops being called at the
// end of that second, and is probed again a cool-down later.
func TestCircuitBreakerOnByDefault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, st, _, clk := newFlaky(t)
	st.down.Store(true)
	const calls = 20
	for i := 1; i <= calls; i++ {
		if _, err := l.Allow(ctx, "k"); err == nil || errors.Is(err, limiter.ErrCircuitOpen) {
			t.Fatalf("failure %d: err %v, want a store failure with the circuit closed", i, err)
		}
		clk.Add(time.Second / calls / 2)
	}
	clk.Add(time.Second / 2)
	for i := 0; i < 100; i++ {
		if _, err := l.Allow(ctx, "k"); !errors.Is(err, limiter.ErrCircuitOpen) {
			t.Fatalf("with the breaker open: err %v, want ErrCircuitOpen", err)
		}
	}
	if got := st.applies.Load(); got != calls {
		t.Fatalf("%d calls reached the store, want %d", got, calls)
	}
	clk.Add(time.Second)
	st.down.Store(false)
	if d, err := l.Allow(ctx, "k"); err != nil || !d.Allowed {
		t.Fatalf("probe after the cool-down: %+v, %v; want allowed", d, err)
	}
	if got := st.applies.Load(); got != calls+1 {
		t.Fatalf("%d calls reached the store, want %d (the probe)", got, calls+1)
	}

	// 19 failures in a window are below the volume: the breaker stays closed.
	st.down.Store(true)
	for i := 0; i < calls-1; i++ {
		_, _ = l.Allow(ctx, "k")
	}
	clk.Add(time.Second)
	if _, err := l.Allow(ctx, "k"); errors.Is(err, limiter.ErrCircuitOpen) {
		t.Fatalf("after %d failures in a window: %v, want the store's failure", calls-1, err)
	}
}

// TestCircuitBreakerOff checks the opt-out: every call reaches a dead store.
func TestCircuitBreakerOff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, st, h, clk := newFlaky(t, limiter.WithCircuitBreaker(limiter.CircuitBreaker{Off: true}))
	st.down.Store(true)
	const calls = 50
	for i := 0; i < calls; i++ {
		if _, err := l.Allow(ctx, "k"); err == nil || errors.Is(err, limiter.ErrCircuitOpen) {
			t.Fatalf("call %d: err %v, want the store's failure", i, err)
		}
		clk.Add(100 * time.Millisecond)
	}
	if got := st.applies.Load(); got != calls {
		t.Fatalf("%d calls reached the store, want %d", got, calls)
	}
	if got := h.count(); got != calls {
		t.Fatalf("error handler called %d times, want %d", got, calls)
	}
}

// TestCircuitBreakerOptionsLastWins checks that of two WithCircuitBreaker the last one
// decides, and that an invalid one is not an error once another follows it.
func TestCircuitBreakerOptionsLastWins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, _, _, _ = newFlaky(t, limiter.WithCircuitBreaker(limiter.CircuitBreaker{MinCalls: -1}),
		limiter.WithCircuitBreaker(limiter.CircuitBreaker{Off: true}))

	l, st, _, clk := newFlaky(t, limiter.WithCircuitBreaker(limiter.CircuitBreaker{Off: true}),
		limiter.WithCircuitBreaker(limiter.CircuitBreaker{MinCalls: 2}))
	st.down.Store(true)
	for i := 0; i < 10; i++ {
		_, _ = l.Allow(ctx, "k")
		if i == 1 {
			clk.Add(time.Second)
		}
	}
	if got := st.applies.Load(); got != 2 {
		t.Fatalf("%d calls reached the store, want 2 (CircuitBreaker{MinCalls: 2} came last)", got)
	}
}

// TestCircuitBreakerInvalid: a field out of range is an invalid config naming it, unless
// the breaker is Off.
func TestCircuitBreakerInvalid(t *testing.T) {
	t.Parallel()
	st := newLocal(t, nil)
	a := algo.GCRA{Rate: 1, Burst: 1}
	for _, tc := range []struct {
		cb   limiter.CircuitBreaker
		want string
	}{
		{limiter.CircuitBreaker{FailureRate: -0.1}, "FailureRate"},
		{limiter.CircuitBreaker{FailureRate: 1.5}, "FailureRate"},
		{limiter.CircuitBreaker{FailureRate: math.NaN()}, "FailureRate"},
		{limiter.CircuitBreaker{MinCalls: -1}, "MinCalls"},
		{limiter.CircuitBreaker{Window: -time.Second}, "Window"},
		{limiter.CircuitBreaker{CoolDown: -time.Second}, "CoolDown"},
		{limiter.CircuitBreaker{ConsecutiveFailures: -1}, "ConsecutiveFailures"},
	} {
		_, err := limiter.New(st, a, limiter.WithCircuitBreaker(tc.cb))
		if !errors.Is(err, algo.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("WithCircuitBreaker(%+v): %v, want algo.ErrInvalidConfig naming %s", tc.cb, err, tc.want)
		}
		tc.cb.Off = true
		if _, err := limiter.New(st, a, limiter.WithCircuitBreaker(tc.cb)); err != nil {
			t.Errorf("WithCircuitBreaker(%+v): %v, want no error: the breaker is off", tc.cb, err)
		}
	}
	for _, cb := range []limiter.CircuitBreaker{{}, {FailureRate: 1, MinCalls: 1, Window: time.Nanosecond, CoolDown: time.Nanosecond}} {
		if _, err := limiter.New(st, a, limiter.WithCircuitBreaker(cb)); err != nil {
			t.Errorf("WithCircuitBreaker(%+v): %v", cb, err)
		}
	}
}

// TestCircuitBreakerCountsOnFastPath checks that the fast path (no timeout, breaker
// clean) starts a window at a failure, and that the window counts the successes after it.
func TestCircuitBreakerCountsOnFastPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, st, _, clk := newFlaky(t)
	for round := 0; round < 3; round++ {
		// 20 failures and 21 successes: below half.
		st.down.Store(true)
		for i := 0; i < 20; i++ {
			_, _ = l.Allow(ctx, "k")
		}
		st.down.Store(false)
		for i := 0; i < 21; i++ {
			_, _ = l.Allow(ctx, "k")
			clk.Add(time.Millisecond)
		}
		clk.Add(time.Second)
		if _, err := l.Allow(ctx, "k"); err != nil {
			t.Fatalf("round %d: %v; want the store's answer (20 failures of 41 calls are below half)", round, err)
		}
	}
	st.down.Store(true)
	for i := 0; i < 20; i++ {
		_, _ = l.Allow(ctx, "k")
	}
	clk.Add(time.Second)
	if _, err := l.Allow(ctx, "k"); !errors.Is(err, limiter.ErrCircuitOpen) {
		t.Fatalf("after 20 failures in a window: %v, want ErrCircuitOpen", err)
	}
}
