package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

func runBucketProperties(t *testing.T, f Factory) {
	for i, rb := range []struct {
		rate  float64
		burst int64
	}{{10, 5}, {3, 2}, {1000, 100}, {1e6 / 7, 3}, {0.5, 1}, {7, 7}} {
		t.Run(fmt.Sprintf("SameAdmission/rate=%g,burst=%d", rb.rate, rb.burst), func(t *testing.T) {
			t.Parallel()
			checkSameAdmission(t, f, rb.rate, rb.burst, int64(2000+i), scaled(2000))
		})
	}
	highRate := []algo.Algorithm{
		algo.TokenBucket{Rate: 1e7, Burst: 10}, algo.LeakyBucket{Rate: 1e7, Capacity: 10},
		algo.TokenBucket{Rate: 1e6 / 1.1, Burst: 100}, algo.LeakyBucket{Rate: 1e6 / 1.1, Capacity: 100},
		algo.TokenBucket{Rate: 1e6 / 3.3, Burst: 100}, algo.LeakyBucket{Rate: 1e6 / 3.3, Capacity: 100},
		algo.GCRA{Rate: 1e6, Burst: 100}, algo.GCRA{Rate: 2.5e5, Burst: 100}, // whole-µs intervals
		algo.GCRA{Rate: 1e6 / 1.1, Burst: 100}, algo.GCRA{Rate: 1e6 / 3.3, Burst: 100},
	}
	for _, a := range highRate {
		t.Run(fmt.Sprintf("HighRate/%v", a), func(t *testing.T) {
			t.Parallel()
			checkHighRate(t, f, a)
		})
	}
}

// checkSameAdmission offers one timeline (forward only, MaxWait 0) to a TokenBucket, a
// GCRA and a LeakyBucket meter of the same rate and size, each on its own key: all three
// must admit the same requests. The only disagreement tolerated is a rounding at an exact
// microsecond boundary: the one that denies must say it would allow 1µs later. After such
// a disagreement the three states differ, so the run goes on with three fresh keys.
func checkSameAdmission(t *testing.T, f Factory, rate float64, burst int64, seed int64, steps int) {
	tb := algo.TokenBucket{Rate: rate, Burst: burst}
	gc := algo.GCRA{Rate: rate, Burst: burst}
	lb := algo.LeakyBucket{Rate: rate, Capacity: burst}
	h := newHarness(t, f, startFor(seed))
	g := newGen(seed, tb, false)
	round, tolerated := 0, 0
	for i := 0; i < steps; i++ {
		h.clk.Add(g.forward())
		req := algo.Request{N: g.small()}
		ds := [3]algo.Decision{
			h.apply(fmt.Sprint("tb/", round), tb, req),
			h.apply(fmt.Sprint("gcra/", round), gc, req),
			h.apply(fmt.Sprint("lb/", round), lb, req),
		}
		if ds[0].Allowed == ds[1].Allowed && ds[0].Allowed == ds[2].Allowed {
			continue
		}
		for _, d := range ds {
			if !d.Allowed && d.RetryAfter != time.Microsecond {
				t.Fatalf("seed %d step %d at %d, request %s:\n token bucket %s\n gcra         %s\n leaky meter  %s",
					seed, i, h.now(), reqString(req), describe(ds[0]), describe(ds[1]), describe(ds[2]))
			}
		}
		round++
		tolerated++
	}
	if tolerated > steps/100 {
		t.Fatalf("seed %d: %d of %d steps disagreed by 1µs roundings, want at most 1%%", seed, tolerated, steps)
	}
}

// checkHighRate checks a bucket whose emission interval is a microsecond or less: with the
// clock frozen it admits exactly its burst, and then, offered more than its rate every
// microsecond for 400µs, it admits at most burst + rate·elapsed (+1 for rounding).
func checkHighRate(t *testing.T, f Factory, a algo.Algorithm) {
	var rate float64
	switch c := a.(type) {
	case algo.TokenBucket:
		rate = c.Rate
	case algo.LeakyBucket:
		rate = c.Rate
	case algo.GCRA:
		rate = c.Rate
	}
	burst := limitOf(a)
	h := newHarness(t, f, epoch)
	admitted := int64(0)
	for i := int64(0); i < 3*burst; i++ {
		if h.apply("k", a, algo.Request{N: 1}).Allowed {
			admitted++
		}
	}
	if admitted != burst {
		t.Fatalf("%v: %d requests at one instant admitted %d, want exactly %d", a, 3*burst, admitted, burst)
	}
	micros := scaled(400)
	for i := 0; i < micros; i++ {
		h.clk.Add(time.Microsecond)
		for j := 0; j < 64 && h.apply("k", a, algo.Request{N: 1}).Allowed; j++ {
			admitted++
		}
	}
	if bound := float64(burst) + rate*float64(micros)/1e6 + 1; float64(admitted) > bound {
		t.Fatalf("%v: admitted %d in %dµs, at most %.1f allowed", a, admitted, micros, bound)
	}
}
