package algo_test

import (
	"fmt"
	"github.com/ratekit/limiter/algo"
	"math"
	"math/big"
	"testing"
	"time"
)

// timelineModes are the kinds of random timelines every algorithm is run on.
var timelineModes = []struct {
	name                        string
	backwards, reserve, refunds bool
}{
	{name: "now"},
	{name: "reserve", reserve: true},
	{name: "refund", reserve: true, refunds: true},
	{name: "backwards", backwards: true, reserve: true},
	{name: "all", backwards: true, reserve: true, refunds: true},
}

// TestRandomTimelines runs every algorithm on seeded random timelines and checks, at every
// step, the Decision invariants (Remaining ≥ 0, allowed ⇒ Wait ≤ MaxWait, denied ⇒
// RetryAfter > 0, a denial writes nothing), the exactness probes, and at the end the
// admission bound of the algorithm and that a second run decides identically.
func TestRandomTimelines(t *testing.T) {
	t.Parallel()
	const seeds, steps = 12, 1500
	var stats probeStats
	t.Cleanup(func() {
		probes, off := stats.probes.Load(), stats.missed.Load()
		t.Logf("%d probes, %d off by float64 rounding (within tolerance)", probes, off)
		if off*1000 > probes {
			t.Errorf("more than 0.1%% of the probes were off")
		}
	})
	for _, base := range allAlgorithms() {
		for _, mode := range timelineModes {
			t.Run(fmt.Sprintf("%s/%s", base.Name(), mode.name), func(t *testing.T) {
				t.Parallel()
				for seed := int64(1); seed <= seeds; seed++ {
					r := seeded(t, seed)
					a := genConfig(r, base)
					ops := genOps(r, a, steps, mode.backwards, mode.reserve, mode.refunds)
					// Odd seeds start around the epoch, both sides; even seeds around today
					// (µs since the epoch near 1.8e15, where a float64 resolves 1/4 µs).
					start := r.Int63n(4*sec*sec) - 2*sec*sec
					if seed%2 == 0 {
						start += today
					}
					tl := run(t, a, start, ops, runOpts{probes: true, stats: &stats})
					checkBound(t, a, tl)
					again := run(t, a, start, ops, runOpts{})
					for i := range tl.decisions {
						if tl.decisions[i] != again.decisions[i] {
							t.Fatalf("%v seed %d: decision %d differs between runs: %+v, %+v",
								a, seed, i, tl.decisions[i], again.decisions[i])
						}
					}
				}
			})
		}
	}
}

// TestFIFO checks that reservations are served in order: with the clock moving forward
// only, no grant acts before a grant made earlier. The leaky bucket is left out: with
// MaxWait 0 it is a meter, whose grants do not queue (see its doc comment); its shaping
// queue is checked on reservations alone.
func TestFIFO(t *testing.T) {
	t.Parallel()
	for _, base := range allAlgorithms() {
		t.Run(base.Name(), func(t *testing.T) {
			t.Parallel()
			for seed := int64(1); seed <= 20; seed++ {
				r := seeded(t, seed)
				a := genConfig(r, base)
				ops := genOps(r, a, 1000, false, true, false)
				if _, ok := a.(algo.LeakyBucket); ok {
					for i := range ops {
						ops[i].maxWait = max(ops[i].maxWait, time.Microsecond)
					}
				}
				tl := run(t, a, 0, ops, runOpts{})
				for i := 1; i < len(tl.grants); i++ {
					if tl.grants[i].at < tl.grants[i-1].at {
						t.Fatalf("%v seed %d: grant %d acts at %d, before grant %d at %d",
							a, seed, i, tl.grants[i].at, i-1, tl.grants[i-1].at)
					}
				}
			}
		})
	}
}

// exactBucket is a token bucket in exact rational arithmetic, refilling one token every
// interval µs: the oracle the GCRA and the token bucket are held to.
type exactBucket struct {
	burst, interval int64
	tokens          *big.Rat
	last            int64
}

// allow answers a request for n at now (MaxWait 0, now never earlier than before), and
// reports whether the tokens were exactly n: a boundary that float64 may miss.
func (e *exactBucket) allow(now, n int64) (ok, boundary bool) {
	burst := new(big.Rat).SetInt64(e.burst)
	tokens := burst
	if e.tokens != nil {
		tokens = new(big.Rat).Add(e.tokens, big.NewRat(now-e.last, e.interval))
		if tokens.Cmp(burst) > 0 {
			tokens = burst
		}
	}
	switch tokens.Cmp(new(big.Rat).SetInt64(n)) {
	case -1:
		return false, false
	case 0:
		boundary = true
	}
	e.tokens, e.last = tokens.Sub(tokens, new(big.Rat).SetInt64(n)), now
	return true, boundary
}

// TestGCRAMatchesTokenBucket runs a GCRA, a token bucket and an exact rational token
// bucket on the same random timelines (MaxWait 0, clock forward only), near the epoch and
// near today. The GCRA works in whole µs: its interval is T = ceil(1e6/Rate), so it is a
// token bucket of Rate' = 1e6/T (Rate itself when 1e6/Rate is a whole number), and its
// integer arithmetic must match the exact bucket at every step. A TokenBucket of Rate'
// computes in float64 like golang.org/x/time/rate: it must match too, except where the
// exact tokens equal N, a boundary its rounding may miss by a hair; those are counted.
func TestGCRAMatchesTokenBucket(t *testing.T) {
	t.Parallel()
	for _, start := range []int64{0, today} {
		t.Run(fmt.Sprint(start), func(t *testing.T) {
			t.Parallel()
			var compared, boundaries, missed int
			for seed := int64(1); seed <= 40; seed++ {
				r := seeded(t, seed)
				g := genConfig(r, algo.GCRA{}).(algo.GCRA)
				interval := int64(math.Ceil(1e6 / g.Rate))
				tbc := algo.TokenBucket{Rate: 1e6 / float64(interval), Burst: g.Burst}
				exact := &exactBucket{burst: g.Burst, interval: interval}
				ops := genOps(r, tbc, 2000, false, false, false)
				ts, gs := tbc.NewState(), g.NewState()
				now := start + r.Int63n(sec*sec)
				for i, p := range ops {
					now += p.dt
					req := algo.Request{N: p.n}
					dt, dg := tbc.Apply(ts, now, req), g.Apply(gs, now, req)
					want, boundary := false, false
					if p.n > 0 && p.n <= g.Burst {
						want, boundary = exact.allow(now, p.n)
					}
					compared++
					if boundary {
						boundaries++
					}
					if dg.Allowed != want {
						t.Fatalf("seed %d step %d (now=%d, N=%d): %v allowed=%v, exact bucket %v",
							seed, i, now, p.n, g, dg.Allowed, want)
					}
					if dt.Allowed != want {
						if !boundary {
							t.Fatalf("seed %d step %d (now=%d, N=%d): %v allowed=%v, exact bucket %v",
								seed, i, now, p.n, tbc, dt.Allowed, want)
						}
						missed++
						// Start all three afresh, far later, rather than carry the difference.
						ts = tbc.NewState()
						exact = &exactBucket{burst: g.Burst, interval: interval}
						gs = g.NewState()
						now += 10 * sec * interval // far enough for every state to be fresh
					}
				}
			}
			t.Logf("%d decisions compared, %d at an exact boundary, %d of those missed by the float64 token bucket",
				compared, boundaries, missed)
		})
	}
}

// TestGCRABurstInPieces takes a whole burst, one permit at a time, from an idle key at a
// non-round rate near today: every permit is granted, as from a token bucket.
func TestGCRABurstInPieces(t *testing.T) {
	t.Parallel()
	r := seeded(t, 1)
	for range 2000 {
		g := algo.GCRA{Rate: 0.1 + r.Float64()*1e4, Burst: 1 + r.Int63n(20)}
		st := g.NewState()
		now := today + r.Int63n(sec*sec)
		for k := range g.Burst {
			if d := g.Apply(st, now, algo.Request{N: 1}); !d.Allowed || d.Remaining != g.Burst-k-1 {
				t.Fatalf("%v: permit %d of the burst: %+v", g, k+1, d)
			}
		}
		if d := g.Apply(st, now, algo.Request{N: 1}); d.Allowed {
			t.Fatalf("%v: a permit beyond the burst: %+v", g, d)
		}
	}
}

// TestBucketBoundExtremeRates checks the bound of the rate algorithms, and the exactness
// probes, with the rate at its extremes.
func TestBucketBoundExtremeRates(t *testing.T) {
	t.Parallel()
	for _, a := range []algo.Algorithm{
		algo.TokenBucket{Rate: 1e9, Burst: 3},
		algo.TokenBucket{Rate: 1e-6, Burst: 3},
		algo.GCRA{Rate: 1e6, Burst: 3}, // GCRA's largest rate
		algo.GCRA{Rate: 1e-6, Burst: 3},
		algo.LeakyBucket{Rate: 1e9, Capacity: 3},
		algo.LeakyBucket{Rate: 1e-6, Capacity: 3},
	} {
		r := seeded(t, 7)
		ops := genOps(r, a, 2000, false, true, false)
		for i := range ops {
			ops[i].dt = r.Int63n(3) // µs steps: at 1e9/s that refills 1000 per µs
			if rateOf(a) < 1 {
				ops[i].dt = r.Int63n(2 * sec * sec)
			}
		}
		var stats probeStats
		tl := run(t, a, 0, ops, runOpts{probes: true, stats: &stats})
		t.Logf("%v: %d probes, %d off by float64 rounding (within %dµs)", a, stats.probes.Load(), stats.missed.Load(), tolerance(a))
		checkBound(t, a, tl)
		if len(tl.grants) == 0 {
			t.Fatalf("%v: nothing granted", a)
		}
	}
}
