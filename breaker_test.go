package limiter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/store"
)

func TestCircuitBreaker(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, st, h, clk := newFlaky(t, limiter.WithCircuitBreaker(3, 10*time.Second))
	// call makes one Allow and reports whether it reached the store and whether the error
	// says the circuit is open.
	call := func(step string, wantStore, wantOpen bool) {
		t.Helper()
		before := st.applies.Load()
		_, err := l.Allow(ctx, "k")
		reached := st.applies.Load() > before
		open := errors.Is(err, limiter.ErrCircuitOpen)
		if reached != wantStore || open != wantOpen {
			t.Fatalf("%s: reached the store %v (want %v), circuit open %v (want %v), err %v",
				step, reached, wantStore, open, wantOpen, err)
		}
		if open && !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("%s: %v does not wrap store.ErrUnavailable", step, err)
		}
	}
	st.down.Store(true)
	// Two failures, then a success: the count restarts.
	call("failure 1", true, false)
	call("failure 2", true, false)
	st.down.Store(false)
	call("success", true, false)
	st.down.Store(true)
	call("failure 1 again", true, false)
	call("failure 2 again", true, false)
	call("failure 3 opens", true, false)
	call("open", false, true)
	clk.Add(10*time.Second - time.Microsecond)
	call("open, 1µs before the end of the cool-down", false, true)
	clk.Add(time.Microsecond)
	call("half-open probe fails", true, false)
	call("open again", false, true)
	clk.Add(9 * time.Second)
	call("still open: a new cool-down started at the failed probe", false, true)
	clk.Add(time.Second)
	st.down.Store(false)
	call("probe succeeds", true, false)
	call("closed", true, false)
	st.down.Store(true)
	call("closed: failure 1", true, false)
	call("closed: failure 2", true, false)
	if got, want := h.count(), 12; got != want { // 8 failures + 4 skipped calls
		t.Fatalf("error handler called %d times, want %d", got, want)
	}
	// Refunds are skipped while the circuit is open.
	st.down.Store(false)
	r, err := l.Reserve(ctx, "r", 2, time.Hour)
	if err != nil || !r.OK() {
		t.Fatal(err)
	}
	r, err = l.Reserve(ctx, "r", 2, time.Hour)
	if err != nil || r.Delay() == 0 {
		t.Fatal(err)
	}
	st.down.Store(true)
	call("after two successes: failure 1", true, false)
	call("failure 2", true, false)
	call("failure 3 opens again", true, false)
	if err := r.Cancel(ctx); !errors.Is(err, limiter.ErrCircuitOpen) || st.refunds.Load() != 0 {
		t.Fatalf("Cancel with the circuit open = %v after %d refunds; want ErrCircuitOpen, none", err, st.refunds.Load())
	}
}

func TestCircuitBreakerSingleProbe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, st, _, clk := newFlaky(t, limiter.WithCircuitBreaker(1, time.Second))
	st.down.Store(true)
	l.Allow(ctx, "k") // opens
	clk.Add(time.Second)
	st.down.Store(false)
	st.gate, st.entered = make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := l.Allow(ctx, "k")
		done <- err
	}()
	<-st.entered // the probe is inside the store
	if _, err := l.Allow(ctx, "k"); !errors.Is(err, limiter.ErrCircuitOpen) {
		t.Fatalf("Allow while the probe is in flight = %v; want ErrCircuitOpen", err)
	}
	close(st.gate)
	if err := <-done; err != nil {
		t.Fatalf("probe = %v; want success", err)
	}
	st.gate = nil
	if _, err := l.Allow(ctx, "k"); err != nil {
		t.Fatalf("Allow after a successful probe = %v; want nil", err)
	}
}

func TestCircuitBreakerProbeReleasedOnInputError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, st, _, clk := newFlaky(t, limiter.WithCircuitBreaker(1, time.Second))
	st.down.Store(true)
	l.Allow(ctx, "k")
	clk.Add(time.Second)
	// A probe cancelled by its caller tells nothing about the store: the next call probes.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	st.block.Store(true)
	if _, err := l.Allow(cctx, "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled probe = %v; want context.Canceled", err)
	}
	st.block.Store(false)
	st.down.Store(false)
	before := st.applies.Load()
	if _, err := l.Allow(ctx, "k"); err != nil || st.applies.Load() != before+1 {
		t.Fatalf("next call = %v (reached the store: %v); want a successful probe", err, st.applies.Load() > before)
	}
}
