package algo_test

import (
	"fmt"
	"github.com/ratekit/limiter/algo"
	"math/rand"
	"testing"
	"time"
)

// Instants in the tables are in µs; these read better than long literals.
const (
	msec  int64 = 1000
	sec   int64 = 1_000_000
	today int64 = 1_770_000_000_000_000 // early 2026
)

// step is one row of a transition table: Apply(now, {n, maxWait}) must return want, or,
// with refund set, Refund(now, n, at) is called and nothing is checked.
type step struct {
	now     int64
	n       int64
	maxWait time.Duration
	want    algo.Decision // Limit is filled in; At defaults to now+Wait when Allowed
	refund  bool
	at      int64 // for refund
}

// refundStep returns the step that refunds n permits of the grant made at at.
func refundStep(now, n, at int64) step { return step{now: now, n: n, at: at, refund: true} }

// runSteps applies the table to one fresh state, in order.
func runSteps(t *testing.T, a algo.Algorithm, steps []step) {
	t.Helper()
	st := a.NewState()
	for i, s := range steps {
		if s.refund {
			a.Refund(st, s.now, s.n, s.at)
			continue
		}
		want := s.want
		want.Limit = limitOf(a)
		if want.Allowed && want.At == 0 {
			want.At = s.now + int64(want.Wait/time.Microsecond)
		}
		got := a.Apply(st, s.now, algo.Request{N: s.n, MaxWait: s.maxWait})
		if got != want {
			t.Fatalf("%v step %d: Apply(now=%d, N=%d, MaxWait=%v)\n got %+v\nwant %+v",
				a, i, s.now, s.n, s.maxWait, got, want)
		}
	}
}

// limitOf is the Decision.Limit of a: its Quota's Limit.
func limitOf(a algo.Algorithm) int64 {
	q, ok := algo.QuotaOf(a)
	if !ok {
		panic(fmt.Sprintf("no Quota: %T", a))
	}
	return q.Limit
}

// windowOf is the window length in µs of a window algorithm, 0 for the others.
func windowOf(a algo.Algorithm) int64 {
	switch c := a.(type) {
	case algo.FixedWindow:
		return int64(c.Window / time.Microsecond)
	case algo.SlidingWindowLog:
		return int64(c.Window / time.Microsecond)
	case algo.SlidingWindowCounter:
		return int64(c.Window / time.Microsecond)
	}
	return 0
}

// rateOf is the refill rate per second of a bucket algorithm, 0 for the others.
func rateOf(a algo.Algorithm) float64 {
	switch c := a.(type) {
	case algo.TokenBucket:
		return c.Rate
	case algo.LeakyBucket:
		return c.Rate
	case algo.GCRA:
		return c.Rate
	}
	return 0
}

// clone deep-copies a state so a probe can be applied without changing the original, as
// the stores do: through algo.StateCloner (nil without it).
func clone(st algo.State) algo.State {
	if c, ok := st.(algo.StateCloner); ok {
		return c.CloneState()
	}
	return nil
}

// floorDiv divides rounding towards minus infinity: the window index of an instant.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// micros converts a Duration that the algorithms produced to µs.
func micros(d time.Duration) int64 { return int64(d / time.Microsecond) }

// checkDecision verifies what every decision must satisfy whatever the algorithm and the
// history: the invariants of the Decision type documented in algo.go.
func checkDecision(tb testing.TB, a algo.Algorithm, now int64, req algo.Request, d algo.Decision) {
	tb.Helper()
	fail := func(format string, args ...any) {
		tb.Helper()
		tb.Fatalf("%v: Apply(now=%d, %+v) = %+v: %s", a, now, req, d, fmt.Sprintf(format, args...))
	}
	limit := limitOf(a)
	if d.Limit != limit {
		fail("Limit != %d", limit)
	}
	if d.Remaining < 0 || d.Remaining > limit {
		fail("Remaining outside [0, %d]", limit)
	}
	if d.ResetAfter < 0 || d.RetryAfter < 0 || d.Wait < 0 {
		fail("negative duration")
	}
	if d.ResetAfter != algo.Never && d.ResetAfter%time.Microsecond != 0 {
		fail("ResetAfter is not whole µs")
	}
	if d.Allowed {
		if req.N <= 0 || req.N > limit {
			fail("allowed a request that can never be granted")
		}
		if d.RetryAfter != 0 {
			fail("allowed with RetryAfter")
		}
		if d.Wait > max(req.MaxWait, 0) {
			fail("Wait > MaxWait")
		}
		if d.Wait%time.Microsecond != 0 || micros(d.Wait) >= algo.MaxMicros {
			fail("Wait not whole µs below MaxMicros")
		}
		if d.At < now+micros(d.Wait) {
			fail("At < now + Wait")
		}
		return
	}
	if d.Wait != 0 || d.At != 0 {
		fail("denied with Wait or At")
	}
	if d.RetryAfter <= 0 {
		fail("denied with RetryAfter <= 0")
	}
	if d.RetryAfter != algo.Never && d.RetryAfter%time.Microsecond != 0 {
		fail("RetryAfter is not whole µs")
	}
	if (req.N <= 0 || req.N > limit) && d.RetryAfter != algo.Never {
		fail("impossible request without RetryAfter == Never")
	}
}

// seeded returns a generator for a named random test and logs its seed on failure, so a
// failing run can be replayed by fixing the seed.
func seeded(t *testing.T, seed int64) *rand.Rand {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("random seed: %d", seed)
		}
	})
	return rand.New(rand.NewSource(seed))
}

// allAlgorithms returns one config of each algorithm for tests that range over all.
func allAlgorithms() []algo.Algorithm {
	return []algo.Algorithm{
		algo.FixedWindow{Limit: 10, Window: time.Second},
		algo.SlidingWindowLog{Limit: 10, Window: time.Second},
		algo.SlidingWindowCounter{Limit: 10, Window: time.Second},
		algo.TokenBucket{Rate: 10, Burst: 10},
		algo.LeakyBucket{Rate: 10, Capacity: 10},
		algo.GCRA{Rate: 10, Burst: 10},
	}
}
