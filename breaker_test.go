package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/store"
)

// breakerCall makes one Allow on l and checks whether it reached st and whether its error
// says the circuit is open.
func breakerCall(t *testing.T, l *limiter.Limiter, st *flakyStore, step string, wantStore, wantOpen bool) {
	t.Helper()
	before := st.applies.Load()
	_, err := l.Allow(context.Background(), "k")
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

// TestCircuitBreaker walks the breaker through its states on a fake clock (its run rule
// out of the way: see TestCircuitBreakerRun): a window
// starts at a failure and is judged when it ends, on its rate and volume; open, it skips
// the store for the cool-down; then one probe decides.
func TestCircuitBreaker(t *testing.T) {
	t.Parallel()
	const window, coolDown = 10 * time.Second, 20 * time.Second
	l, st, h, clk := newFlaky(t, limiter.WithCircuitBreaker(limiter.CircuitBreaker{
		FailureRate: 0.5, MinCalls: 4, Window: window, CoolDown: coolDown, ConsecutiveFailures: 1000}))
	call := func(step string, wantStore, wantOpen bool) { breakerCall(t, l, st, step, wantStore, wantOpen) }

	// Below the rate: 1 failure of 4 calls. The window ends, the breaker stays closed.
	st.down.Store(true)
	call("rate: failure", true, false)
	st.down.Store(false)
	for i := 0; i < 3; i++ {
		call("rate: success", true, false)
	}
	clk.Add(window)
	call("rate: after the window", true, false)

	// Below the volume: 3 failures of 3 calls.
	st.down.Store(true)
	for i := 0; i < 3; i++ {
		call("volume: failure", true, false)
	}
	clk.Add(window)
	call("volume: a failure after the window starts the next", true, false)

	// 3 failures of 4 calls: still closed until the window ends, then open from its end.
	call("failure 2", true, false)
	st.down.Store(false)
	call("success", true, false)
	st.down.Store(true)
	call("failure 3", true, false)
	clk.Add(window - time.Microsecond)
	call("the window is still open", true, false) // failure 4 of 5
	clk.Add(time.Microsecond)
	call("the window ended: open", false, true)
	clk.Add(coolDown - time.Microsecond)
	call("open, 1µs before the end of the cool-down", false, true)
	clk.Add(time.Microsecond)
	call("half-open probe fails", true, false)
	call("open again", false, true)
	clk.Add(coolDown - time.Second)
	call("still open: a new cool-down started at the failed probe", false, true)
	clk.Add(time.Second)
	st.down.Store(false)
	call("probe succeeds", true, false)
	call("closed", true, false)
	st.down.Store(true)
	call("closed: a failure opens a window", true, false)
	if got, want := h.count(), 14; got != want { // 10 failures + 4 skipped calls
		t.Fatalf("error handler called %d times, want %d", got, want)
	}

	// A window judged long after it ended opened the breaker at its end: once the
	// cool-down has passed too, the next call is the probe.
	for i := 0; i < 3; i++ {
		call("failure", true, false)
	}
	clk.Add(window + coolDown)
	st.down.Store(false)
	call("probe after a late judgement", true, false)
	call("closed again", true, false)

	// Refunds are skipped while the circuit is open. The reservation is due after the
	// window that opens the breaker ends, so that Cancel still gives it back.
	var r *limiter.Reservation
	for i := 0; i < 8; i++ {
		var err error
		if r, err = l.Reserve(context.Background(), "r", 2, time.Hour); err != nil || !r.OK() {
			t.Fatal(err)
		}
	}
	if r.Delay() <= window {
		t.Fatalf("the last reservation is due in %v, want more than %v", r.Delay(), window)
	}
	st.down.Store(true)
	for i := 0; i < 4; i++ {
		call("failure", true, false)
	}
	clk.Add(window)
	call("open", false, true)
	if err := r.Cancel(context.Background()); !errors.Is(err, limiter.ErrCircuitOpen) || st.refunds.Load() != 0 {
		t.Fatalf("Cancel with the circuit open = %v after %d refunds; want ErrCircuitOpen, none", err, st.refunds.Load())
	}
}

// TestCircuitBreakerBurst: at steady traffic, a run of failures covering less than
// FailureRate of a window (a stall of the host, timeouts under CPU load) does not open
// the default breaker, however many calls fail in it; a store down for a whole window
// does. The old breaker opened at the 5th failure in a row.
func TestCircuitBreakerBurst(t *testing.T) {
	t.Parallel()
	l, st, _, clk := newFlaky(t) // the default breaker
	const step = time.Millisecond
	tick := func(what string, ms int, down bool) {
		st.down.Store(down)
		for i := 0; i < ms; i++ {
			breakerCall(t, l, st, fmt.Sprintf("%s, call %d", what, i), true, false)
			clk.Add(step)
		}
	}
	// 1000 calls a second: 490 ms of failures, then successes, three times over.
	for round := 0; round < 3; round++ {
		tick("burst", 490, true)
		tick("healthy", 1000, false)
	}
	// Down for a whole window: open at its end.
	tick("down", 1000, true)
	breakerCall(t, l, st, "after a window down", false, true)
}

// TestCircuitBreakerIgnoresKeyFailures: a store that marks a failure as one key's
// (store.ErrKeyUnavailable, such as WRONGTYPE on one Redis key) answered the call. The
// failure policy answers the call, the error handler sees it, but the breaker does not
// count it, so the other keys are not cut off; and a key's failure on the half-open
// probe closes the breaker, since the store answered.
func TestCircuitBreakerIgnoresKeyFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	keyErr := fmt.Errorf("%w: WRONGTYPE on key \"bad\"", store.ErrKeyUnavailable)
	for _, policy := range []limiter.FailurePolicy{limiter.FailClosed, limiter.FailOpen} {
		t.Run(policy.String(), func(t *testing.T) {
			t.Parallel()
			cb := limiter.CircuitBreaker{MinCalls: 1, Window: time.Second, CoolDown: time.Second}
			l, st, h, clk := newFlaky(t, limiter.WithFailurePolicy(policy), limiter.WithCircuitBreaker(cb))
			st.other.Store(&keyErr)
			for i := 0; i < 100; i++ {
				d, err := l.Allow(ctx, "bad")
				if !errors.Is(err, store.ErrKeyUnavailable) || errors.Is(err, limiter.ErrCircuitOpen) {
					t.Fatalf("call %d: %v, want the key's failure", i, err)
				}
				if d.Allowed != (policy == limiter.FailOpen) {
					t.Fatalf("call %d under %v: %+v, want the policy's answer", i, policy, d)
				}
			}
			clk.Add(time.Second)
			st.other.Store(nil)
			if d, err := l.Allow(ctx, "good"); err != nil || !d.Allowed {
				t.Fatalf("a healthy key after 100 failures of another: %+v, %v; want allowed", d, err)
			}
			if got := h.count(); got != 100 {
				t.Errorf("error handler called %d times, want 100", got)
			}

			// Open the breaker with an outage, then let the probe meet a key's failure.
			st.down.Store(true)
			breakerCall(t, l, st, "outage", true, false)
			clk.Add(2 * time.Second)
			st.down.Store(false)
			st.other.Store(&keyErr)
			breakerCall(t, l, st, "probe meets a key's failure", true, false)
			st.other.Store(nil)
			breakerCall(t, l, st, "closed", true, false)
		})
	}
}

// openBreaker makes one failure and moves clk past the window and the cool-down of a
// CircuitBreaker{MinCalls: 1, Window: time.Second, CoolDown: time.Second}: the next call
// is the probe.
func openBreaker(t *testing.T, l *limiter.Limiter, st *flakyStore, clk interface{ Add(time.Duration) }) {
	t.Helper()
	st.down.Store(true)
	_, _ = l.Allow(context.Background(), "k")
	clk.Add(2 * time.Second)
}

var probeFast = limiter.WithCircuitBreaker(limiter.CircuitBreaker{MinCalls: 1, Window: time.Second, CoolDown: time.Second})

func TestCircuitBreakerSingleProbe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, st, _, clk := newFlaky(t, probeFast)
	openBreaker(t, l, st, clk)
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
	l, st, _, clk := newFlaky(t, probeFast)
	openBreaker(t, l, st, clk)
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
