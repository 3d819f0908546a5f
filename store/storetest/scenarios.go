package storetest

import (
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

// A scenario is an exact table: every step's decision is written out from the semantics
// documented on the algorithm's type, not taken from its transition.
type scenario struct {
	name   string
	alg    algo.Algorithm
	origin time.Time // step instants are offsets from it; zero means epoch
	steps  []step
	skip   string // non-empty: the table documents a known bug and is skipped with this text
}

// A step either applies a request at an instant and expects a decision, or (refund ≥ 0)
// refunds n permits of the grant made by step number refund.
type step struct {
	at     time.Duration
	n      int64
	wait   time.Duration // MaxWait
	want   want
	refund int // index of the step whose grant is refunded; -1 for an Apply
}

// want is an expected decision. At is implied: the step's instant plus Wait when allowed.
type want struct {
	allowed    bool
	remaining  int64
	retryAfter time.Duration
	resetAfter time.Duration
	wait       time.Duration
}

// ask applies {N: n, MaxWait: maxWait} at the instant origin+at.
func ask(at time.Duration, n int64, maxWait time.Duration, w want) step {
	return step{at: at, n: n, wait: maxWait, want: w, refund: -1}
}

// giveBack refunds n permits of the grant of step number of, at origin+at.
func giveBack(at time.Duration, n int64, of int) step {
	return step{at: at, n: n, refund: of}
}

// ok is an allowed decision.
func ok(remaining int64, resetAfter, wait time.Duration) want {
	return want{allowed: true, remaining: remaining, resetAfter: resetAfter, wait: wait}
}

// deny is a denied decision.
func deny(remaining int64, retryAfter, resetAfter time.Duration) want {
	return want{remaining: remaining, retryAfter: retryAfter, resetAfter: resetAfter}
}

const (
	us      = time.Microsecond
	ms      = time.Millisecond
	sec     = time.Second
	never   = algo.Never
	forever = algo.Forever
)

func runScenarios(t *testing.T, f Factory) {
	var all []scenario
	all = append(all, windowScenarios()...)
	all = append(all, bucketScenarios()...)
	all = append(all, retryWithMaxWaitScenarios()...)
	all = append(all, refundedTailScenarios()...)
	for _, sc := range all {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			if sc.skip != "" {
				t.Skip(sc.skip)
			}
			runScenario(t, f, sc)
		})
	}
}

// runScenario plays sc on a fresh store, key "k", and checks every field of every decision.
func runScenario(t *testing.T, f Factory, sc scenario) {
	origin := sc.origin
	if origin.IsZero() {
		origin = epoch
	}
	h := newHarness(t, f, origin)
	ats := make([]int64, len(sc.steps))
	for i, st := range sc.steps {
		h.clk.Set(origin.Add(st.at))
		if st.refund >= 0 {
			h.refund("k", sc.alg, st.n, ats[st.refund])
			continue
		}
		req := algo.Request{N: st.n, MaxWait: st.wait}
		got := h.apply("k", sc.alg, req)
		ats[i] = got.At
		w := algo.Decision{
			Allowed: st.want.allowed, Limit: limitOf(sc.alg), Remaining: st.want.remaining,
			RetryAfter: st.want.retryAfter, ResetAfter: st.want.resetAfter, Wait: st.want.wait,
		}
		if w.Allowed {
			w.At = h.now() + int64(w.Wait/time.Microsecond)
		} else {
			got.At = 0 // At only identifies grants
		}
		if got != w {
			t.Fatalf("%v step %d at origin+%v, request %s:\n got  %s\n want %s",
				sc.alg, i, st.at, reqString(req), describe(got), describe(w))
		}
	}
}

// windowScenarios are the tables of the window algorithms. Origin is epoch, a window
// boundary for every window below.
func windowScenarios() []scenario {
	fw := algo.FixedWindow{Limit: 3, Window: sec}
	odd := algo.FixedWindow{Limit: 1, Window: 13 * us}
	// The first boundary of a 13µs window after epoch, to show windows align to the Unix
	// epoch and not to the first request.
	oddBoundary := time.UnixMicro((epoch.UnixMicro()/13 + 1) * 13).UTC()
	swl := algo.SlidingWindowLog{Limit: 3, Window: sec}
	swc := algo.SlidingWindowCounter{Limit: 10, Window: sec}
	return []scenario{
		{name: "FixedWindow/basic", alg: fw, steps: []step{
			0:  ask(700*ms, 1, 0, ok(2, 300*ms, 0)), // fresh key
			1:  ask(800*ms, 2, 0, ok(0, 200*ms, 0)), // exhausts window 0
			2:  ask(900*ms, 1, 0, deny(0, 100*ms, 100*ms)),
			3:  ask(999*ms+999*us, 1, 0, deny(0, us, us)),  // retry-after is exact
			4:  ask(sec, 1, 0, ok(2, sec, 0)),              // the boundary is epoch-aligned
			5:  ask(1500*ms, 4, 0, deny(2, never, 500*ms)), // N > Limit
			6:  ask(1500*ms, 4, forever, deny(2, never, 500*ms)),
			7:  giveBack(1500*ms, 1, 4), // window 1 gets its permit back
			8:  ask(1500*ms, 3, 0, ok(0, 500*ms, 0)),
			9:  giveBack(1500*ms, 1, 0), // window 0 has passed: nothing comes back
			10: ask(1500*ms, 1, 0, deny(0, 500*ms, 500*ms)),
			11: ask(1600*ms, 2, -sec, deny(0, 400*ms, 400*ms)),  // negative MaxWait is 0
			12: ask(1600*ms, 2, 400*ms, ok(0, 1400*ms, 400*ms)), // reserved at 2s
			13: ask(1700*ms, 1, 0, deny(0, 300*ms, 1300*ms)),    // queues behind the tail
			14: ask(1700*ms, 2, 0, deny(0, 1300*ms, 1300*ms)),   // only fits in window 3
			15: ask(2*sec, 1, 0, ok(0, sec, 0)),
			16: ask(2*sec, 1, 0, deny(0, sec, sec)),
			17: ask(10*sec, 3, 0, ok(0, sec, 0)), // idle: fresh again
		}},
		{name: "FixedWindow/queue", alg: algo.FixedWindow{Limit: 2, Window: sec}, steps: []step{
			ask(0, 2, 0, ok(0, sec, 0)),
			ask(100*ms, 1, forever, ok(0, 1900*ms, 900*ms)),
			ask(100*ms, 1, forever, ok(0, 1900*ms, 900*ms)),
			ask(100*ms, 1, forever, ok(0, 2900*ms, 1900*ms)),
			ask(sec, 1, 0, deny(0, sec, 2*sec)), // window 1 is full of reservations
			ask(2*sec, 1, 0, ok(0, sec, 0)),
			ask(2*sec, 1, 0, deny(0, sec, sec)),
		}},
		{name: "FixedWindow/epoch-aligned-13us", alg: odd, origin: oddBoundary.Add(-2 * us), steps: []step{
			ask(0, 1, 0, ok(0, 2*us, 0)),
			ask(us, 1, 0, deny(0, us, us)),
			ask(2*us, 1, 0, ok(0, 13*us, 0)),
			ask(14*us, 1, 0, deny(0, us, us)),
			ask(14*us, 1, forever, ok(0, 14*us, us)),
		}},
		{name: "SlidingWindowLog/basic", alg: swl, steps: []step{
			0:  ask(700*ms, 1, 0, ok(2, sec, 0)),
			1:  ask(900*ms, 2, 0, ok(0, sec, 0)),
			2:  ask(sec, 1, 0, deny(0, 700*ms, 900*ms)), // the grant at 700ms leaves at 1700ms
			3:  ask(1699*ms+999*us, 1, 0, deny(0, us, 200*ms+us)),
			4:  ask(1700*ms, 1, 0, ok(0, sec, 0)), // (t-W, t]: a grant W ago no longer counts
			5:  ask(1700*ms, 4, 0, deny(0, never, sec)),
			6:  ask(1700*ms, 2, 0, deny(0, 200*ms, sec)),
			7:  ask(1700*ms, 2, 200*ms, ok(0, 1200*ms, 200*ms)), // reserved at 1900ms
			8:  ask(1700*ms, 1, 0, deny(0, sec, 1200*ms)),       // (900ms,1900ms] is full: 2700ms
			9:  giveBack(1700*ms, 1, 4),                         // the grant at 1700ms is gone from the log
			10: ask(1700*ms, 1, 0, deny(0, 200*ms, 1200*ms)),    // first come, first served: behind 1900ms
			11: ask(1900*ms, 1, 0, ok(0, sec, 0)),               // 700ms and 900ms have left: 1900ms holds 3
			12: ask(1900*ms, 1, 0, deny(0, sec, sec)),
			13: giveBack(1900*ms, 1, 11),
			14: ask(1900*ms, 1, 0, ok(0, sec, 0)),
			15: giveBack(1900*ms, 1, 0), // long gone: no effect
			16: ask(1900*ms, 1, 0, deny(0, sec, sec)),
			17: ask(5*sec, 3, 0, ok(0, sec, 0)),
		}},
		{name: "SlidingWindowLog/3us", alg: algo.SlidingWindowLog{Limit: 2, Window: 3 * us}, steps: []step{
			ask(0, 1, 0, ok(1, 3*us, 0)),
			ask(us, 1, 0, ok(0, 3*us, 0)),
			ask(2*us, 1, 0, deny(0, us, 2*us)),
			ask(3*us, 1, 0, ok(0, 3*us, 0)),
			ask(3*us, 1, forever, ok(0, 4*us, us)),
		}},
		{name: "SlidingWindowCounter/basic", alg: swc, steps: []step{
			0: ask(500*ms, 10, 0, ok(0, 1500*ms, 0)),
			// 1100ms: estimate = 10·0.9 + 0, so one more fits (10·0.9+1 ≤ 10).
			1:  ask(900*ms, 1, 0, deny(0, 200*ms, 1100*ms)),
			2:  ask(1100*ms, 1, 0, ok(0, 1900*ms, 0)),
			3:  ask(1100*ms, 1, 0, deny(0, 100*ms, 1900*ms)), // 10·0.8 + 1 + 1 ≤ 10 at 1200ms
			4:  ask(1500*ms, 3, 0, ok(1, 1500*ms, 0)),        // 5 + 1 + 3 ≤ 10; 10 - 5 - 4 = 1 left
			5:  ask(1500*ms, 2, 0, deny(1, 100*ms, 1500*ms)), // 10·0.4 + 4 + 2 at 1600ms
			6:  ask(1500*ms, 11, 0, deny(1, never, 1500*ms)),
			7:  ask(2*sec, 6, 0, ok(0, 2*sec, 0)),                // prev 4 fully weighted: 4 + 6
			8:  ask(2*sec, 1, forever, ok(0, 2*sec, 250*ms)),     // 4·0.75 + 6 + 1 at 2250ms
			9:  ask(2*sec, 1, 0, deny(0, 500*ms, 2*sec)),         // 4·0.5 + 7 + 1 at 2500ms
			10: giveBack(2*sec, 1, 8),                            // back to curr 6
			11: ask(2*sec, 1, forever, ok(0, 2*sec, 250*ms)),     // the same reservation again
			12: ask(2*sec, 4, forever, ok(0, 3*sec, 1142858*us)), // window 3: 7·(1-x) + 4 ≤ 10, x ≥ 1/7
			13: ask(3500*ms, 1, 0, ok(1, 1500*ms, 0)),            // 7·0.5 + 4 + 1 = 8.5
			14: ask(9*sec, 10, 0, ok(0, 2*sec, 0)),               // idle: fresh again
		}},
	}
}
