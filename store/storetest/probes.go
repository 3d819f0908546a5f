package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

// twins is how many keys receive each history: identical requests at identical instants
// give them identical states, so each can then be probed once without disturbing the rest.
const twins = 6

func runProbes(t *testing.T, f Factory) {
	for i, a := range algo.Samples() {
		t.Run(fmt.Sprintf("%v", a), func(t *testing.T) {
			t.Parallel()
			checkProbes(t, f, a, int64(5000+i), scaled(40))
		})
	}
}

// checkProbes plays random histories on twin keys and then checks, on one twin each, what
// the last decision promised:
//
//   - Remaining: a request for Remaining permits is allowed at once, and (algo.Exact) one
//     for Remaining+1 (when ≤ Limit) is denied;
//   - RetryAfter (after a denial): the same request, with its MaxWait, is denied 1µs
//     before RetryAfter has passed and allowed when it has;
//   - ResetAfter (algo.Exact): once it has passed, the key decides exactly like a key
//     never seen.
//
// RetryAfter and ResetAfter are exact to the µs for every algorithm.
func checkProbes(t *testing.T, f Factory, a algo.Algorithm, seed int64, histories int) {
	h := newHarness(t, f, startFor(seed))
	g := newGen(seed, a, false)
	limit := limitOf(a)
	for hist := 0; hist < histories; hist++ {
		key := func(i int) string { return fmt.Sprintf("h%d/twin%d", hist, i) }
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("%v seed %d history %d: %s", a, seed, hist, fmt.Sprintf(format, args...))
		}
		// Histories start where the previous one's probes left the clock.
		var last algo.Decision
		var lastReq algo.Request
		length := 1 + g.r.Intn(25)
		for i := 0; i < length; i++ {
			h.clk.Add(g.forward())
			lastReq = g.request()
			last = h.apply(key(0), a, lastReq)
			for k := 1; k < twins; k++ {
				if d := h.apply(key(k), a, lastReq); d != last {
					fail("step %d: twin keys decided differently: %s and %s", i, describe(last), describe(d))
				}
			}
		}
		now := h.clk.Now()
		end := now // the latest instant a probe used; the next history starts there
		at := func(d time.Duration) {
			h.clk.Set(now.Add(d))
			if h.clk.Now().After(end) {
				end = h.clk.Now()
			}
		}

		// Remaining.
		if r := last.Remaining; r > 0 {
			if d := h.apply(key(1), a, algo.Request{N: r}); !d.Allowed {
				fail("after %s, a request for Remaining = %d was denied: %s", describe(last), r, describe(d))
			}
		}
		if r := last.Remaining; r+1 <= limit && isExact(a) {
			if d := h.apply(key(2), a, algo.Request{N: r + 1}); d.Allowed {
				fail("after %s, a request for Remaining+1 = %d was allowed: %s", describe(last), r+1, describe(d))
			}
		}

		// RetryAfter.
		if !last.Allowed && last.RetryAfter != algo.Never {
			if early := time.Microsecond; last.RetryAfter > early {
				at(last.RetryAfter - early)
				if d := h.apply(key(3), a, lastReq); d.Allowed {
					fail("denied %s with %s, but allowed %v before RetryAfter: %s",
						reqString(lastReq), describe(last), early, describe(d))
				}
			}
			at(last.RetryAfter)
			if d := h.apply(key(4), a, lastReq); !d.Allowed {
				fail("denied %s with %s, and denied again after RetryAfter: %s",
					reqString(lastReq), describe(last), describe(d))
			}
		}

		// ResetAfter (a year or more is not worth a probe; an algorithm that is not
		// algo.Exact may keep a state that differs from a fresh one past it).
		if last.ResetAfter >= 365*24*time.Hour || !isExact(a) {
			h.clk.Set(end)
			continue
		}
		at(last.ResetAfter)
		probe := algo.Request{N: limit}
		got := h.apply(key(5), a, probe)
		want := h.apply(fmt.Sprintf("h%d/fresh", hist), a, probe)
		if got != want {
			fail("after %s, ResetAfter later the key decided %s, a fresh key %s",
				describe(last), describe(got), describe(want))
		}
		h.clk.Set(end)
	}
}
