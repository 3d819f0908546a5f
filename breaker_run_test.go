package limiter_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ratekit/limiter"
)

// TestCircuitBreakerLowVolume: a caller making 5 calls a second against a hung store (each
// call waits out a 200 ms timeout, here on the fake clock) never fills the default
// window's MinCalls of 20; the breaker must still cut it off within 2.5 s, by its run of
// consecutive outages, and then let one probe through per cool-down.
func TestCircuitBreakerLowVolume(t *testing.T) {
	t.Parallel()
	l, st, _, clk := newFlaky(t) // the default breaker
	st.down.Store(true)
	const every = 200 * time.Millisecond // 5 calls a second, each taking its whole timeout
	opened := time.Duration(-1)
	for at := time.Duration(0); at < 10*time.Second; at += every {
		before := st.applies.Load()
		breakerCallAny(l)
		if st.applies.Load() == before {
			opened = at
			break
		}
		clk.Add(every) // the call waited out its timeout
	}
	if opened < 0 || opened > 2500*time.Millisecond {
		t.Fatalf("a caller of 5 calls a second against a hung store cut off after %v, want within 2.5 s (-1: never)", opened)
	}
	// Open: one probe per cool-down (1 s), the other calls skipped; over 10 s, 10 probes.
	before := st.applies.Load()
	for at := time.Duration(0); at < 10*time.Second; at += every {
		breakerCallAny(l)
		clk.Add(every) // a probe waits out its timeout; the 4 others stand for a caller's pause
	}
	if probes := st.applies.Load() - before; probes < 8 || probes > 10 {
		t.Fatalf("%d probes reached the store in 10 s of cool-downs of 1 s, want about 10", probes)
	}
	st.down.Store(false)
	clk.Add(time.Second)
	breakerCall(t, l, st, "the probe succeeds", true, false)
	breakerCall(t, l, st, "closed", true, false)
}

// TestCircuitBreakerRun: the run of outages opens the breaker only when it holds
// ConsecutiveFailures of them and spans Window, and an answered call ends it.
func TestCircuitBreakerRun(t *testing.T) {
	t.Parallel()
	cb := limiter.CircuitBreaker{ConsecutiveFailures: 3, Window: time.Second, MinCalls: 1000}
	call := func(l *limiter.Limiter, st *flakyStore, step string, wantStore, wantOpen bool) {
		breakerCall(t, l, st, step, wantStore, wantOpen)
	}

	t.Run("at once: not a run across Window", func(t *testing.T) {
		t.Parallel()
		l, st, _, clk := newFlaky(t, limiter.WithCircuitBreaker(cb))
		st.down.Store(true)
		for i := 0; i < 100; i++ { // a burst, at one instant
			call(l, st, fmt.Sprintf("burst %d", i), true, false)
		}
		clk.Add(time.Second)
		call(l, st, "the run spans Window now", true, false)
		call(l, st, "open", false, true)
	})
	t.Run("an answer ends the run", func(t *testing.T) {
		t.Parallel()
		l, st, _, clk := newFlaky(t, limiter.WithCircuitBreaker(cb))
		for i := 0; i < 5; i++ {
			st.down.Store(true)
			call(l, st, "failure 1", true, false)
			clk.Add(time.Second)
			call(l, st, "failure 2", true, false)
			clk.Add(time.Second)
			st.down.Store(false)
			call(l, st, "an answer", true, false)
		}
		st.down.Store(true)
		call(l, st, "failure 1", true, false)
		call(l, st, "failure 2", true, false)
		clk.Add(time.Second)
		call(l, st, "failure 3, 1 s after the first", true, false)
		call(l, st, "open", false, true)
	})
	t.Run("exactly ConsecutiveFailures", func(t *testing.T) {
		t.Parallel()
		l, st, _, clk := newFlaky(t, limiter.WithCircuitBreaker(cb))
		st.down.Store(true)
		call(l, st, "failure 1", true, false)
		clk.Add(2 * time.Second)
		call(l, st, "failure 2, 2 s later", true, false)
		call(l, st, "failure 3", true, false)
		call(l, st, "open", false, true)
		clk.Add(time.Second)
		call(l, st, "the probe fails", true, false)
		call(l, st, "open again at once", false, true)
	})
}

// breakerCallAny makes one Allow on l, whatever its answer.
func breakerCallAny(l *limiter.Limiter) { _, _ = l.Allow(context.Background(), "k") }
