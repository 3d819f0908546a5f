package smooth_test

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

// grant is one permit granted by a SmoothBursty key, as the store decided it: at is the
// instant the permit may be used (Decision.At, µs) and wait the wait the store gave
// (Decision.Wait, µs), so at − wait is the instant the store decided at.
type grant struct{ at, wait int64 }

// checkPacing checks grants of one permit each, all from a SmoothBursty(rate, maxBurst)
// key created at t0 or later, against what Guava's model guarantees however the callers
// were scheduled: only the store's decisions are checked, never when the callers ran.
// It returns the number of paced pairs (two consecutive grants that both waited, which
// must be exactly one interval apart) and a description of each violation.
//
// The rules, for the grants in the order the store made them (by at, then decision
// instant):
//   - a grant that waited was reserved while another was pending, so no permit was stored:
//     the next grant comes one full interval later, exactly so if it waited too;
//   - a grant that waited comes at most one interval after the grant before it (which
//     spent at most one fresh permit), and strictly after it;
//   - stored permits only come from time: the first k grants are at most 1 + rate × (at of
//     the k-th − t0) (the first is free), and any k consecutive grants span at least
//     (k − 1 − maxPermits) intervals.
func checkPacing(grants []grant, rate, maxBurst float64, t0 int64) (paced int, errs []string) {
	gs := slices.Clone(grants)
	slices.SortFunc(gs, func(a, b grant) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return int((a.at - a.wait) - (b.at - b.wait))
	})
	interval := 1e6 / rate
	maxPermits := maxBurst * rate
	// Each grant's fraction of an interval is truncated to the µs below (Guava's (long)),
	// so i grants may come up to i µs earlier than exact arithmetic says.
	const slack = 1e-9
	for i, g := range gs {
		if g.wait < 0 || g.at < t0 {
			errs = append(errs, fmt.Sprintf("grant %d at %d µs waited %d µs: before the key's creation (%d) or a negative wait", i, g.at, g.wait, t0))
		}
		if got, most := float64(i+1), 1+rate*float64(g.at-t0+int64(i))/1e6; got > most+slack {
			errs = append(errs, fmt.Sprintf("%d grants by %d µs, %d µs after the key's creation: want at most %.3f", i+1, g.at, g.at-t0, most))
		}
		if i == 0 {
			continue
		}
		p := gs[i-1]
		gap := g.at - p.at
		switch {
		case p.wait > 0 && g.wait > 0:
			paced++
			if gap != int64(interval) {
				errs = append(errs, fmt.Sprintf("grants %d and %d both waited and are %d µs apart, want exactly %d µs", i-1, i, gap, int64(interval)))
			}
		case p.wait > 0:
			if gap < int64(interval) {
				errs = append(errs, fmt.Sprintf("grant %d waited and grant %d is %d µs after it, want ≥ %d µs (nothing was stored)", i-1, i, gap, int64(interval)))
			}
		case g.wait > 0:
			if gap <= 0 || gap > int64(interval) {
				errs = append(errs, fmt.Sprintf("grant %d waited and is %d µs after grant %d, want in (0, %d] µs", i, gap, i-1, int64(interval)))
			}
		}
	}
	for j := range gs {
		for i := j + 1; i < len(gs); i++ {
			if k, most := float64(i-j+1), 1+maxPermits+float64(gs[i].at-gs[j].at+int64(i-j))/interval; k > most+slack {
				errs = append(errs, fmt.Sprintf("grants %d to %d: %d grants in %d µs, want at most %.3f (a burst beyond the stored maximum)",
					j, i, i-j+1, gs[i].at-gs[j].at, most))
				return paced, errs
			}
		}
	}
	return paced, errs
}

// referenceGrants asks the Go reference transition of a for one permit at a time, at
// instants that mix queued callers, idle gaps (stored permits) and bursts after them, as
// scheduled processes would, from t0 on.
func referenceGrants(a algo.SmoothBursty, t0 int64, seed int64, n int) []grant {
	r := rand.New(rand.NewSource(seed))
	s := a.NewState()
	a.Apply(s, t0, algo.Request{N: 1<<53 + 1}) // the constructor's sync: creates the key at t0
	now := t0
	var gs []grant
	burst := 0 // callers still to come back at once: they found stored permits
	for len(gs) < n {
		switch x := r.Intn(100); {
		case burst > 0:
			burst--
			now += r.Int63n(50)
		case x < 60: // queued callers: a few µs apart
			now += r.Int63n(50)
		case x < 90: // a caller woke and came back
			now += r.Int63n(int64(2e6 / a.Rate))
		default: // every process descheduled: the key idles, then its callers rush in
			now += r.Int63n(int64(3e6 * a.MaxBurstSeconds))
			burst = r.Intn(int(2 * a.MaxBurstSeconds * a.Rate))
		}
		d := a.Apply(s, now, algo.Request{N: 1, MaxWait: algo.Forever})
		gs = append(gs, grant{at: d.At, wait: int64(d.Wait / time.Microsecond)})
	}
	return gs
}

// TestCheckPacingOnReference checks the oracle of TestSmoothMultiProcessPacing: Guava's own
// decisions pass it under every schedule, and a limiter too fast, too slow or bursting
// beyond its maximum fails it.
func TestCheckPacingOnReference(t *testing.T) {
	t.Parallel()
	const rate, t0 = 50.0, 1_700_000_000_000_000
	totalPaced := 0
	for seed := int64(0); seed < 200; seed++ {
		gs := referenceGrants(algo.SmoothBursty{Rate: rate, MaxBurstSeconds: 1}, t0, seed, 150)
		paced, errs := checkPacing(gs, rate, 1, t0)
		if len(errs) > 0 {
			t.Fatalf("seed %d: Guava's decisions fail the check: %v", seed, errs)
		}
		totalPaced += paced
	}
	if totalPaced == 0 {
		t.Error("the schedules never queued two callers: the exact-interval rule was not exercised")
	}
	for _, bad := range []struct {
		name string
		a    algo.SmoothBursty
	}{
		{"too fast", algo.SmoothBursty{Rate: rate * 1.05, MaxBurstSeconds: 1}},
		{"too slow", algo.SmoothBursty{Rate: rate * 0.95, MaxBurstSeconds: 1}},
		{"bursts too much", algo.SmoothBursty{Rate: rate, MaxBurstSeconds: 1.5}},
	} {
		failed, example := 0, ""
		for seed := int64(0); seed < 20; seed++ {
			if _, errs := checkPacing(referenceGrants(bad.a, t0, seed, 150), rate, 1, t0); len(errs) > 0 {
				failed, example = failed+1, errs[0]
			}
		}
		if failed == 0 {
			t.Errorf("%s (%v): no schedule failed the check", bad.name, bad.a)
		}
		t.Logf("%s: %d of 20 schedules failed, e.g. %s", bad.name, failed, example)
	}
}
