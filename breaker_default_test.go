package limiter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ratekit/limiter"
)

// TestCircuitBreakerOnByDefault checks that a Limiter made without any breaker option
// has one, with DefaultBreakerFailures and DefaultBreakerCoolDown: a dead store stops
// being called after that many failures, and is probed again a cool-down later.
func TestCircuitBreakerOnByDefault(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, st, _, clk := newFlaky(t)
	st.down.Store(true)
	for i := 1; i <= limiter.DefaultBreakerFailures; i++ {
		if _, err := l.Allow(ctx, "k"); err == nil || errors.Is(err, limiter.ErrCircuitOpen) {
			t.Fatalf("failure %d: err %v, want a store failure with the circuit closed", i, err)
		}
	}
	if got := st.applies.Load(); got != limiter.DefaultBreakerFailures {
		t.Fatalf("%d calls reached the store, want %d", got, limiter.DefaultBreakerFailures)
	}
	for i := 0; i < 100; i++ {
		if _, err := l.Allow(ctx, "k"); !errors.Is(err, limiter.ErrCircuitOpen) {
			t.Fatalf("with the breaker open: err %v, want ErrCircuitOpen", err)
		}
	}
	if got := st.applies.Load(); got != limiter.DefaultBreakerFailures {
		t.Fatalf("the open breaker let %d calls reach the store", got-limiter.DefaultBreakerFailures)
	}
	clk.Add(limiter.DefaultBreakerCoolDown)
	st.down.Store(false)
	if d, err := l.Allow(ctx, "k"); err != nil || !d.Allowed {
		t.Fatalf("probe after the cool-down: %+v, %v; want allowed", d, err)
	}
	if got := st.applies.Load(); got != limiter.DefaultBreakerFailures+1 {
		t.Fatalf("%d calls reached the store, want %d (the probe)", got, limiter.DefaultBreakerFailures+1)
	}
}

// TestWithoutCircuitBreaker checks the opt-out: every call reaches a dead store.
func TestWithoutCircuitBreaker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, st, h, _ := newFlaky(t, limiter.WithoutCircuitBreaker())
	st.down.Store(true)
	const calls = 50
	for i := 0; i < calls; i++ {
		if _, err := l.Allow(ctx, "k"); err == nil || errors.Is(err, limiter.ErrCircuitOpen) {
			t.Fatalf("call %d: err %v, want the store's failure", i, err)
		}
	}
	if got := st.applies.Load(); got != calls {
		t.Fatalf("%d calls reached the store, want %d", got, calls)
	}
	if got := h.count(); got != calls {
		t.Fatalf("error handler called %d times, want %d", got, calls)
	}
}

// TestCircuitBreakerOptionsLastWins checks that of WithCircuitBreaker and
// WithoutCircuitBreaker the last one given decides, and that an invalid
// WithCircuitBreaker is not an error once WithoutCircuitBreaker follows it.
func TestCircuitBreakerOptionsLastWins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, _, _, _ = newFlaky(t, limiter.WithCircuitBreaker(0, 0), limiter.WithoutCircuitBreaker())

	l, st, _, _ := newFlaky(t, limiter.WithoutCircuitBreaker(), limiter.WithCircuitBreaker(2, time.Minute))
	st.down.Store(true)
	for i := 0; i < 10; i++ {
		_, _ = l.Allow(ctx, "k")
	}
	if got := st.applies.Load(); got != 2 {
		t.Fatalf("%d calls reached the store, want 2 (WithCircuitBreaker(2, ...) came last)", got)
	}
}

// TestCircuitBreakerCountsConsecutiveOnFastPath checks that the fast path (no timeout,
// breaker clean) counts failures and that a success in between restarts the count.
func TestCircuitBreakerCountsConsecutiveOnFastPath(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, st, _, _ := newFlaky(t)
	for round := 0; round < 3; round++ {
		st.down.Store(true)
		for i := 0; i < limiter.DefaultBreakerFailures-1; i++ {
			_, _ = l.Allow(ctx, "k")
		}
		st.down.Store(false)
		if _, err := l.Allow(ctx, "k"); err != nil {
			t.Fatalf("round %d: %v; want the store's answer (%d failures are below the threshold)",
				round, err, limiter.DefaultBreakerFailures-1)
		}
	}
	st.down.Store(true)
	for i := 0; i < limiter.DefaultBreakerFailures; i++ {
		_, _ = l.Allow(ctx, "k")
	}
	if _, err := l.Allow(ctx, "k"); !errors.Is(err, limiter.ErrCircuitOpen) {
		t.Fatalf("after %d consecutive failures: %v, want ErrCircuitOpen", limiter.DefaultBreakerFailures, err)
	}
}
