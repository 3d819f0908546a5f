package storetest

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

// grant is one allowed decision, kept to check bounds over a whole run.
type grant struct {
	at, n int64
}

func runProperties(t *testing.T, f Factory) {
	for i, a := range algo.Samples() {
		t.Run(fmt.Sprintf("Bounds/%v", a), func(t *testing.T) {
			t.Parallel()
			checkBounds(t, f, a, int64(1000+i), scaled(1500))
		})
	}
	t.Run("FixedWindowDense", func(t *testing.T) { t.Parallel(); checkFixedWindowDense(t, f) })
	runBucketProperties(t, f)
	for i, a := range []algo.Algorithm{
		algo.TokenBucket{Rate: 10, Burst: 5}, algo.TokenBucket{Rate: 3, Burst: 2},
		algo.GCRA{Rate: 10, Burst: 5}, algo.GCRA{Rate: 3, Burst: 2}, algo.GCRA{Rate: 1e6 / 7, Burst: 3},
		algo.LeakyBucket{Rate: 10, Capacity: 5}, algo.LeakyBucket{Rate: 3, Capacity: 4},
		algo.LeakyBucket{Rate: 1e6 / 7, Capacity: 3},
	} {
		t.Run(fmt.Sprintf("Spacing/%v", a), func(t *testing.T) {
			t.Parallel()
			checkSpacing(t, f, a, int64(3000+i), scaled(1500))
		})
	}
}

// checkDecision checks what holds for every decision of every algorithm, and for an
// algo.Exact one what its strict reading adds. monotone says the clock never went
// backwards, so the store's now is the clock's.
func checkDecision(a algo.Algorithm, req algo.Request, now int64, monotone bool, d algo.Decision) error {
	limit := limitOf(a)
	exact := isExact(a)
	maxWait := max(req.MaxWait, 0)
	switch {
	case d.Limit != limit:
		return fmt.Errorf("Limit = %d, want %d", d.Limit, limit)
	case d.Remaining < 0 || d.Remaining > limit:
		return fmt.Errorf("Remaining = %d, want it in [0, %d]", d.Remaining, limit)
	case d.ResetAfter < 0:
		return fmt.Errorf("ResetAfter = %v, want ≥ 0", d.ResetAfter)
	case d.Allowed && d.RetryAfter != 0:
		return fmt.Errorf("allowed with RetryAfter = %v, want 0", d.RetryAfter)
	case !d.Allowed && d.RetryAfter <= 0:
		return fmt.Errorf("denied with RetryAfter = %v, want > 0", d.RetryAfter)
	case !d.Allowed && d.Wait != 0:
		return fmt.Errorf("denied with Wait = %v, want 0", d.Wait)
	case exact && req.N > limit && (d.Allowed || d.RetryAfter != algo.Never):
		return fmt.Errorf("N > Limit: want a denial with RetryAfter Never")
	case d.Wait < 0 || d.Wait > maxWait:
		return fmt.Errorf("Wait = %v, want it in [0, MaxWait %v]", d.Wait, durString(maxWait))
	case d.Wait%time.Microsecond != 0:
		return fmt.Errorf("Wait = %v, want whole microseconds", d.Wait)
	case d.Allowed && d.At < now+int64(d.Wait/time.Microsecond):
		return fmt.Errorf("At = %d, before now %d + Wait", d.At, now)
	case d.Allowed && monotone && d.At != now+int64(d.Wait/time.Microsecond):
		return fmt.Errorf("At = %d, want now %d + Wait", d.At, now)
	}
	// Without a bound on the wait, only a queue that is full (leaky bucket) or a wait beyond
	// algo.MaxMicros (RetryAfter Never) can deny a request the algorithm can hold.
	if _, isLeaky := a.(algo.LeakyBucket); exact && !isLeaky && req.MaxWait == algo.Forever && req.N <= limit &&
		!d.Allowed && d.RetryAfter != algo.Never {
		return fmt.Errorf("denied a request with MaxWait Forever and N ≤ Limit")
	}
	return nil
}

// isExact reports whether a states algo.Exact: the suite checks the strict reading of its
// decisions (N > Limit denied for ever, Forever granted, Remaining+1 denied, fresh after
// ResetAfter). The smooth algorithms and Penalty do not promise it; see algo.Exact.
func isExact(a algo.Algorithm) bool { return algo.CapabilitiesOf(a)&algo.Exact != 0 }

// checkBounds drives one key with a random sequence (time going backwards included) and
// checks every decision, then the algorithm's bound on the grants' instants (At).
func checkBounds(t *testing.T, f Factory, a algo.Algorithm, seed int64, steps int) {
	h := newHarness(t, f, startFor(seed))
	g := newGen(seed, a, true)
	var grants []grant
	monotone := true
	for i := 0; i < steps; i++ {
		d := g.step()
		if d < 0 {
			monotone = false
		}
		h.clk.Add(d)
		req := g.request()
		now := h.now()
		dec := h.apply("k", a, req)
		if err := checkDecision(a, req, now, monotone, dec); err != nil {
			t.Fatalf("%v seed %d step %d at %d, request %s: %s: %v", a, seed, i, now, reqString(req), describe(dec), err)
		}
		if dec.Allowed {
			grants = append(grants, grant{at: dec.At, n: req.N})
		}
	}
	if err := checkGrantBound(a, grants); err != nil {
		t.Fatalf("%v seed %d: %v", a, seed, err)
	}
}

// checkGrantBound checks the bound each algorithm documents, on grants by their At.
func checkGrantBound(a algo.Algorithm, grants []grant) error {
	sort.SliceStable(grants, func(i, j int) bool { return grants[i].at < grants[j].at })
	switch c := a.(type) {
	case algo.FixedWindow:
		return perWindow(grants, int64(c.Window/time.Microsecond), c.Limit)
	case algo.SlidingWindowCounter:
		// The current window's own count never exceeds Limit, whatever the estimate.
		return perWindow(grants, int64(c.Window/time.Microsecond), c.Limit)
	case algo.SlidingWindowLog:
		w := int64(c.Window / time.Microsecond)
		var sum int64
		lo := 0
		for _, gr := range grants {
			sum += gr.n
			for grants[lo].at <= gr.at-w {
				sum -= grants[lo].n
				lo++
			}
			if sum > c.Limit {
				return fmt.Errorf("the window (%d, %d] holds %d grants, Limit %d", gr.at-w, gr.at, sum, c.Limit)
			}
		}
	case algo.TokenBucket:
		return envelope(grants, c.Rate, c.Burst)
	case algo.GCRA:
		return envelope(grants, c.Rate, c.Burst)
	case algo.LeakyBucket:
		return envelope(grants, c.Rate, c.Capacity)
	}
	return nil
}

// perWindow checks that no epoch-aligned window of w µs holds more than limit grants.
func perWindow(grants []grant, w, limit int64) error {
	count := map[int64]int64{}
	for _, gr := range grants {
		win := gr.at / w
		count[win] += gr.n
		if count[win] > limit {
			return fmt.Errorf("window [%d, %d) holds %d grants, Limit %d", win*w, (win+1)*w, count[win], limit)
		}
	}
	return nil
}

// envelope checks that the grants whose At lies in any interval [a, b] total at most
// burst + rate·(b − a + 2µs): a wait is rounded up to whole µs, and a GCRA TAT near 2^50 µs is a float with 0.25µs steps, so a reservation's At may
// be up to about 1µs later than the instant its permits were counted at.
func envelope(grants []grant, rate float64, burst int64) error {
	prefix := make([]int64, len(grants)+1)
	for i, gr := range grants {
		prefix[i+1] = prefix[i] + gr.n
	}
	for i := range grants {
		for j := i; j < len(grants); j++ {
			got := prefix[j+1] - prefix[i]
			bound := float64(burst) + rate*float64(grants[j].at-grants[i].at+2)/1e6
			if float64(got) > bound*(1+1e-12) {
				return fmt.Errorf("%d permits granted at instants in [%d, %d], at most %.6f allowed",
					got, grants[i].at, grants[j].at, bound)
			}
		}
	}
	return nil
}

// checkFixedWindowDense offers one permit every 50µs to FixedWindow{5, 1ms}: every whole
// window must grant exactly 5, and each denial must point at the next boundary.
func checkFixedWindowDense(t *testing.T, f Factory) {
	a := algo.FixedWindow{Limit: 5, Window: time.Millisecond}
	h := newHarness(t, f, startFor(4000))
	const w = 1000
	count := map[int64]int64{}
	first := h.now()/w + 1 // the first whole window
	for i := 0; i < scaled(200)*20; i++ {
		now := h.now()
		d := h.apply("k", a, algo.Request{N: 1})
		if d.Allowed {
			count[now/w]++
		} else if got, want := d.RetryAfter, time.Duration((now/w+1)*w-now)*time.Microsecond; got != want {
			t.Fatalf("denied at %d: RetryAfter = %v, want %v (the next boundary)", now, got, want)
		}
		h.clk.Add(50 * time.Microsecond)
	}
	last := h.now()/w - 1
	for win := first; win < last; win++ {
		if got, want := count[win], a.Limit; got != want {
			t.Fatalf("window %d granted %d, want exactly %d", win, got, want)
		}
	}
}

// checkSpacing reserves with MaxWait Forever, arriving faster than the rate. Token bucket
// and GCRA (N = 1): once a grant had to wait (the burst is spent), the next grant comes at
// least 1/Rate later. Leaky bucket (random N): every grant comes at least N/Rate after the
// one before, N being the earlier grant's.
func checkSpacing(t *testing.T, f Factory, a algo.Algorithm, seed int64, steps int) {
	h := newHarness(t, f, startFor(seed))
	g := newGen(seed, a, false)
	_, leaky := a.(algo.LeakyBucket)
	var rate float64
	switch c := a.(type) {
	case algo.TokenBucket:
		rate = c.Rate
	case algo.GCRA:
		rate = c.Rate
	case algo.LeakyBucket:
		rate = c.Rate
	}
	interval := 1e6 / rate // µs
	var prev algo.Decision
	var prevN int64
	grants := 0
	for i := 0; i < steps; i++ {
		h.clk.Add(time.Duration(g.r.Int63n(int64(2*interval)+1)) * time.Microsecond)
		req := algo.Request{N: 1, MaxWait: algo.Forever}
		if leaky {
			req.N = g.small()
		}
		d := h.apply("k", a, req)
		if !d.Allowed {
			if !leaky {
				t.Fatalf("seed %d step %d: %v denied a reservation with MaxWait Forever: %s", seed, i, a, describe(d))
			}
			continue
		}
		if grants > 0 {
			gap := float64(d.At - prev.At)
			var want float64
			switch {
			case leaky:
				want = float64(prevN) * interval
			case prev.Wait > 0:
				want = interval
			}
			if gap < want-1 {
				t.Fatalf("seed %d step %d: %v granted at %d, %v µs after the grant before (%s), want ≥ %.3f µs",
					seed, i, a, d.At, gap, describe(prev), want)
			}
		}
		prev, prevN = d, req.N
		grants++
	}
	if grants < steps/4 {
		t.Fatalf("seed %d: only %d grants in %d steps", seed, grants, steps)
	}
}
