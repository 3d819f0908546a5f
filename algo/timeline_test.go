package algo_test

import (
	"github.com/ratekit/limiter/algo"
	"math"
	"math/big"
	"math/rand"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// op is one event of a timeline: the clock moves by dt µs (backwards when negative), then
// a request {n, maxWait} is applied, or, when refund > 0, n permits of an earlier grant
// (chosen by refund) are refunded instead.
type op struct {
	dt      int64
	n       int64
	maxWait time.Duration
	refund  int
}

// grant is an allowed decision, or (n < 0) the part of a refund the model accounts for.
type grant struct{ at, n int64 }

// timeline is the outcome of running ops on one fresh state.
type timeline struct {
	decisions []algo.Decision
	grants    []grant
	refunded  bool // some op was a refund
	backwards bool // the clock stepped back at least once
}

// runOpts selects the checks that run beside the invariants of checkDecision.
type runOpts struct {
	probes bool        // exactness probes on clones: Remaining, RetryAfter, Wait, ResetAfter
	stats  *probeStats // counts the probes; required with probes
}

// run applies ops to a fresh state of a from instant start, checking every decision.
func run(tb testing.TB, a algo.Algorithm, start int64, ops []op, o runOpts) timeline {
	tb.Helper()
	if err := a.Validate(); err != nil {
		tb.Fatalf("%v: %v", a, err)
	}
	st := a.NewState()
	now, high := start, start
	var tl timeline
	for i, p := range ops {
		now += p.dt
		if now < high {
			tl.backwards = true
		}
		high = max(high, now)
		if p.refund > 0 {
			tl.refunded = true
			refundSome(a, st, now, p, &tl)
			continue
		}
		req := algo.Request{N: p.n, MaxWait: p.maxWait}
		before := clone(st)
		d := a.Apply(st, now, req)
		checkDecision(tb, a, now, req, d)
		if !d.Allowed && !reflect.DeepEqual(before, st) {
			tb.Fatalf("%v op %d: a denial changed the state\nbefore %+v\n after %+v", a, i, before, st)
		}
		if d.Allowed {
			tl.grants = append(tl.grants, grant{d.At, req.N})
			if c, ok := a.(algo.SlidingWindowCounter); ok {
				checkEstimate(tb, c, tl.grants, d.At)
			}
		}
		if o.probes && now == high {
			probe(tb, a, before, st, now, req, d, o.stats)
		}
		tl.decisions = append(tl.decisions, d)
	}
	return tl
}

// refundSome refunds p.n permits of the grant p.refund picks and records in tl the part of
// it that the bound checks may discount: never more than the permits still counted for the
// same instant (sliding log) or window (fixed window, sliding counter). The model may
// discount more than the algorithm restores, which only weakens the bound it checks.
func refundSome(a algo.Algorithm, st algo.State, now int64, p op, tl *timeline) {
	var pos []grant
	for _, g := range tl.grants {
		if g.n > 0 {
			pos = append(pos, g)
		}
	}
	if len(pos) == 0 {
		a.Refund(st, now, p.n, now)
		return
	}
	at := pos[p.refund%len(pos)].at
	a.Refund(st, now, p.n, at)
	if p.n <= 0 {
		return
	}
	w := windowOf(a)
	same := func(x int64) bool {
		if _, ok := a.(algo.SlidingWindowLog); ok || w == 0 {
			return x == at
		}
		return floorDiv(x, w) == floorDiv(at, w)
	}
	var net int64
	for _, g := range tl.grants {
		if same(g.at) {
			net += g.n
		}
	}
	if take := min(p.n, net); take > 0 {
		tl.grants = append(tl.grants, grant{at, -take})
	}
}

// tolerance is how many µs the float algorithms (the buckets) may miss an exact instant
// by: 1 for the ceil of a float64 that lands a hair off a whole µs, more when the counts are
// so large (near 2^53) that float64 no longer resolves the tokens one µs of refill brings.
// The window algorithms and GCRA compute in whole µs: 0.
func tolerance(a algo.Algorithm) int64 {
	rate := rateOf(a)
	if _, ok := a.(algo.GCRA); ok || rate == 0 {
		return 0
	}
	limit := float64(limitOf(a))
	ulp := math.Nextafter(limit, math.Inf(1)) - limit
	return max(1, int64(math.Ceil(8*ulp/rate*1e6)))
}

// probeStats counts the probes and, for the float algorithms, the probes whose answer was
// off, within tolerance, because of float64 rounding.
type probeStats struct{ probes, missed atomic.Int64 }

// probe checks, on clones of the state before (pre) and after (post) a decision, that its
// numbers are exact: Remaining can be taken at once, the request is granted exactly
// RetryAfter later and not a µs sooner, a reservation's Wait is the least MaxWait that
// grants it, and ResetAfter later the state answers like a fresh one. The float algorithms
// may miss by their tolerance (counted in stats), never by more.
func probe(tb testing.TB, a algo.Algorithm, pre, post algo.State, now int64, req algo.Request,
	d algo.Decision, stats *probeStats) {
	tb.Helper()
	tol := tolerance(a)
	fail := func(what string, got algo.Decision) {
		tb.Helper()
		tb.Fatalf("%v: after Apply(now=%d, %+v) = %+v: %s, got %+v", a, now, req, d, what, got)
	}
	// miss records a miss within tolerance, or fails.
	miss := func(what string, got algo.Decision, withinTolerance bool) {
		tb.Helper()
		if tol == 0 || !withinTolerance {
			fail(what, got)
		}
		stats.missed.Add(1)
	}
	stats.probes.Add(1)
	if d.Remaining > 0 {
		if got := a.Apply(clone(post), now, algo.Request{N: d.Remaining}); !got.Allowed || got.Wait != 0 {
			fail("Remaining could not be taken at once", got)
		}
	}
	if !d.Allowed && d.RetryAfter != algo.Never {
		later := now + micros(d.RetryAfter)
		if got := a.Apply(clone(pre), later, req); !got.Allowed {
			miss("the request was denied RetryAfter later", got,
				a.Apply(clone(pre), later+tol, req).Allowed)
		}
		if got := a.Apply(clone(pre), later-1, req); got.Allowed {
			miss("the request was granted a µs before RetryAfter", got,
				!a.Apply(clone(pre), later-1-tol, req).Allowed)
		}
	}
	_, leaky := a.(algo.LeakyBucket)
	// A leaky bucket asked with MaxWait 0 is a meter, not a queue: it may grant at once
	// what the queue makes wait (see its doc comment), so its Wait is minimal among
	// MaxWaits > 0 only.
	if d.Allowed && d.Wait > 0 && !(leaky && d.Wait == time.Microsecond) {
		short := algo.Request{N: req.N, MaxWait: d.Wait - time.Microsecond}
		if got := a.Apply(clone(pre), now, short); got.Allowed || got.RetryAfter != time.Microsecond {
			slack := time.Duration(tol) * time.Microsecond
			miss("a MaxWait a µs shorter than Wait did not deny with RetryAfter == 1µs", got,
				got.Allowed && got.Wait >= short.MaxWait-slack || !got.Allowed && got.RetryAfter <= time.Microsecond+slack)
		}
	}
	if d.ResetAfter != algo.Never {
		later := now + micros(d.ResetAfter)
		if !freshAt(a, post, later) {
			miss("ResetAfter later the state did not answer like a fresh one", d, freshAt(a, post, later+tol))
		}
	}
}

// freshAt reports whether st answers at now like a fresh state, to requests for 1 permit
// and for Limit permits.
func freshAt(a algo.Algorithm, st algo.State, now int64) bool {
	for _, n := range []int64{1, limitOf(a)} {
		r := algo.Request{N: n}
		if a.Apply(clone(st), now, r) != a.Apply(a.NewState(), now, r) {
			return false
		}
	}
	return true
}

// checkEstimate verifies the sliding counter's promise at a grant instant at: the previous
// window weighted by its overlap plus the current window holds at most Limit.
func checkEstimate(tb testing.TB, c algo.SlidingWindowCounter, grants []grant, at int64) {
	tb.Helper()
	w := int64(c.Window / time.Microsecond)
	win := floorDiv(at, w)
	var curr, prev int64
	for _, g := range grants {
		switch floorDiv(g.at, w) {
		case win:
			curr += g.n
		case win - 1:
			prev += g.n
		}
	}
	est := float64(prev)*float64((win+1)*w-at)/float64(w) + float64(curr)
	if est > float64(c.Limit)*(1+1e-12) {
		tb.Fatalf("%v: grant at %d: estimate %v (prev %d, curr %d) > Limit", c, at, est, prev, curr)
	}
}

// checkBound verifies the admission bound of each algorithm on the grants of a timeline.
func checkBound(tb testing.TB, a algo.Algorithm, tl timeline) {
	tb.Helper()
	limit := limitOf(a)
	switch a.(type) {
	case algo.FixedWindow, algo.SlidingWindowCounter:
		w := windowOf(a)
		per := map[int64]int64{}
		for _, g := range tl.grants {
			per[floorDiv(g.at, w)] += g.n
		}
		for win, n := range per {
			if n > limit {
				tb.Fatalf("%v: window %d holds %d permits", a, win, n)
			}
		}
	case algo.SlidingWindowLog:
		if at, n := maxInWindow(tl.grants, windowOf(a)); n > limit {
			tb.Fatalf("%v: the window ending at %d holds %d permits", a, at, n)
		}
	default:
		if tl.refunded {
			return // a refund puts permits back: the bound below does not apply
		}
		if t0, t1, n := maxOverRate(tl.grants, rateOf(a)); n > float64(limit)+1e-6 {
			tb.Fatalf("%v: %v permits (beyond the rate) act in [%d, %d]", a, n, t0, t1)
		}
	}
}

// maxInWindow returns the window (t-w, t] holding the most permits and their count.
func maxInWindow(grants []grant, w int64) (int64, int64) {
	gs := slices.Clone(grants)
	slices.SortFunc(gs, func(x, y grant) int { return cmpInt(x.at, y.at) })
	var best, bestAt, sum int64
	lo := 0
	for hi, g := range gs {
		sum += g.n
		for gs[lo].at <= g.at-w {
			sum -= gs[lo].n
			lo++
		}
		// Count every grant sharing this instant before judging the window.
		if hi+1 < len(gs) && gs[hi+1].at == g.at {
			continue
		}
		if sum > best {
			best, bestAt = sum, g.at
		}
	}
	return bestAt, best
}

// maxOverRate returns the interval [t0, t1] maximising the permits acting in it minus
// rate·(t1-t0+1µs), and that excess: a bucket of size B allows at most B.
func maxOverRate(grants []grant, rate float64) (int64, int64, float64) {
	gs := slices.Clone(grants)
	slices.SortFunc(gs, func(x, y grant) int { return cmpInt(x.at, y.at) })
	// excess(i, j) = prefix[j] - prefix[i-1] - rate·(t_j - t_i)/1e6; keep the best start.
	// Exact rationals: near 2^53 permits (and rates of 10^8/s over days) float64 sums
	// round by tens of permits, more than the bound's slack (FuzzTokenBucket found one).
	perMicro := new(big.Rat).SetFloat64(rate)
	perMicro.Quo(perMicro, big.NewRat(1_000_000, 1))
	var best, startBest, v, at big.Rat
	haveBest, haveStart := false, false
	var bt0, bt1, startAt int64
	var prefix big.Rat
	one := big.NewRat(1, 1)
	for _, g := range gs {
		at.SetInt64(g.at - gs[0].at)
		v.Mul(&at, perMicro)
		v.Sub(&v, &prefix)
		if !haveStart || v.Cmp(&startBest) > 0 {
			startBest.Set(&v)
			startAt, haveStart = g.at, true
		}
		prefix.Add(&prefix, v.SetInt64(g.n))
		// At is rounded up to a whole µs: a grant may really act up to 1µs earlier.
		at.Add(&at, one)
		v.Mul(&at, perMicro)
		v.Sub(&prefix, &v)
		v.Add(&v, &startBest)
		if !haveBest || v.Cmp(&best) > 0 {
			best.Set(&v)
			bt0, bt1, haveBest = startAt, g.at, true
		}
	}
	if !haveBest {
		return 0, 0, math.Inf(-1)
	}
	f, _ := best.Float64()
	return bt0, bt1, f
}

func cmpInt(x, y int64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// genConfig returns a random config of the same kind as a, with non-round numbers.
func genConfig(r *rand.Rand, a algo.Algorithm) algo.Algorithm {
	limit := 1 + r.Int63n(40)
	window := time.Duration(1+r.Int63n(2_000_000)) * time.Microsecond
	rate := math.Exp(r.Float64()*math.Log(1e5)) / 10 // log-uniform in [0.1, 1e4)
	switch a.(type) {
	case algo.FixedWindow:
		return algo.FixedWindow{Limit: limit, Window: window}
	case algo.SlidingWindowLog:
		return algo.SlidingWindowLog{Limit: limit, Window: window}
	case algo.SlidingWindowCounter:
		return algo.SlidingWindowCounter{Limit: limit, Window: window}
	case algo.TokenBucket:
		return algo.TokenBucket{Rate: rate, Burst: limit}
	case algo.LeakyBucket:
		return algo.LeakyBucket{Rate: rate, Capacity: limit}
	case algo.GCRA:
		return algo.GCRA{Rate: rate, Burst: limit}
	}
	panic("unknown algorithm")
}

// period is the time in µs over which a grants about Limit permits.
func period(a algo.Algorithm) int64 {
	if w := windowOf(a); w > 0 {
		return w
	}
	return max(1, int64(float64(limitOf(a))/rateOf(a)*1e6))
}

// genOps returns a random timeline for a: steps mostly small against the period, some
// jumps, and (when asked) backward steps, reservations and refunds.
func genOps(r *rand.Rand, a algo.Algorithm, count int, backwards, reserve, refund bool) []op {
	p, limit := period(a), limitOf(a)
	ops := make([]op, count)
	for i := range ops {
		o := &ops[i]
		switch x := r.Intn(100); {
		case x < 10:
			o.dt = 0
		case x < 85:
			o.dt = r.Int63n(max(1, 2*p/limit) + 1)
		case x < 95:
			o.dt = r.Int63n(3*p + 1)
		case backwards:
			o.dt = -r.Int63n(p + 1)
		default:
			o.dt = r.Int63n(p + 1)
		}
		switch x := r.Intn(100); {
		case x < 2:
			o.n = -r.Int63n(2)
		case x < 5:
			o.n = limit + 1 + r.Int63n(2)
		case x < 10:
			o.n = limit
		default:
			o.n = 1 + r.Int63n(max(1, limit/3))
		}
		if reserve {
			switch x := r.Intn(100); {
			case x < 40:
			case x < 45:
				o.maxWait = algo.Forever
			default:
				o.maxWait = time.Duration(r.Int63n(2*p+1)) * time.Microsecond
			}
		}
		if refund && r.Intn(100) < 8 {
			o.refund = 1 + r.Intn(1000)
		}
	}
	return ops
}
