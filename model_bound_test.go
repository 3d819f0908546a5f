package limiter_test

import (
	"fmt"
	"slices"
	"time"

	"github.com/ratekit/limiter/algo"
)

// modelGrant is one grant a store made for a tracked key: n permits that act at at (µs, the
// store's Decision.At). A grant refunded (a Cancel that reached the store) is not used.
// A charge (Limiter.Charge) is one too, with charge set: its n count against the bound
// of the grants after it, and at is the instant it was written, or the latest act time
// of the grants before it when one is later (a charge is queued behind the reservations
// already made, which it does not move).
type modelGrant struct {
	step      int
	n, at     int64
	cancelled bool
	charge    bool
	// proc is the process that made the grant or the charge; counted, for a grant, the
	// instant its store counted the permits (a leased grant's slice At; 0: at): see
	// modelCeiling.blind.
	proc    int
	counted int64
}

// modelHistory is every grant of one tracked key, in the order the store made them.
type modelHistory struct {
	grants []modelGrant
}

// cancel marks as unused one live grant of n permits acting at at: the one a Refund(n, at)
// gives back. It counts the whole grant as returned, whatever the algorithm restores: the
// bound is then checked on the permits actually used, so an algorithm that gives back more
// than it may (more than x/time/rate's CancelAt) lets later requests use too many.
func (h *modelHistory) cancel(n, at int64) {
	for i := len(h.grants) - 1; i >= 0; i-- {
		if g := &h.grants[i]; !g.cancelled && !g.charge && g.n == n && g.at == at {
			g.cancelled = true
			return
		}
	}
}

// charged records a charge of n written at at (µs) by process proc: see modelGrant.
func (h *modelHistory) charged(step, proc int, n, at int64) {
	for _, g := range h.grants {
		if !g.cancelled {
			at = max(at, g.at)
		}
	}
	h.grants = append(h.grants, modelGrant{step: step, n: n, at: at, charge: true, proc: proc})
}

// used returns the grants not cancelled, sorted by act time.
func (h *modelHistory) used() []modelGrant {
	out := make([]modelGrant, 0, len(h.grants))
	for _, g := range h.grants {
		if !g.cancelled {
			out = append(out, g)
		}
	}
	slices.SortStableFunc(out, func(a, b modelGrant) int { return int(min(max(a.at-b.at, -1), 1)) })
	return out
}

// modelCeiling is the loosest config a run has used so far (the initial one and every
// SetAlgorithm since): the bound checked holds for each of them, so it holds across the
// changes. It is weak after a change, but a burst of 199 where every Burst was 100 breaks it.
type modelCeiling struct {
	name   string  // algo.Algorithm.Name of the family
	limit  int64   // largest Limit, Burst or Capacity
	rate   float64 // largest Rate, per second
	window int64   // window length in µs (the same for every config of a window family)
	cur    float64 // the Rate of the current config (buckets)
	raises []modelRaise
	// blind is set where processes keep leases of one key (leasing, more than one
	// process): a charge takes only its own process's lease, so another's lease grants
	// what its slice counted before the charge. A grant's bucket bound then counts the
	// charges of other processes only when made before its permits were counted (at an
	// earlier instant: a slice counted at the charge's instant may have come before it).
	blind bool
}

// modelRaise is a SetAlgorithm that raised the Rate, at step. It takes effect for a key at
// the key's first grant after it, on the state's timeline: at is, per key, the lowest clock
// reading from the change to that grant (a clock stepping back after the change moves it).
type modelRaise struct {
	step    int
	at      map[string]int64
	granted map[string]bool
}

// changed records that a replaces the current config at step.
func (c *modelCeiling) changed(a algo.Algorithm, step int) {
	old := c.cur
	c.add(a)
	if c.cur > old {
		c.raises = append(c.raises, modelRaise{step: step, at: map[string]int64{}, granted: map[string]bool{}})
	}
}

// observe lowers the raises' instants for key to the clock reading now (µs), until key's
// first grant after each, which h records.
func (c *modelCeiling) observe(key string, h *modelHistory, now int64) {
	for _, r := range c.raises {
		if n := len(h.grants); r.granted[key] || n > 0 && h.grants[n-1].step >= r.step {
			r.granted[key] = true
			continue
		}
		if at, ok := r.at[key]; !ok || now < at {
			r.at[key] = now
		}
	}
}

// queued is the slack a raised Rate earns the bucket bound: the most permits granted
// before one raise whose act time comes after it. Their act times were set at the lower
// rate, later than the higher one would have set them, while the debt still unpaid at the
// key's first grant after the raise is repaid at the higher rate (as x/time/rate's SetLimit
// repays it): so a grant after the raise may act sooner after them than the higher rate
// alone allows, by at most their permits. Grants acting by the raise are not queued, so a
// raise that re-credits the past (or lets a fresh burst on top of a spent one) still breaks
// the bound.
func (c *modelCeiling) queued(key string, used []modelGrant) float64 {
	var most int64
	for _, r := range c.raises {
		at, ok := r.at[key]
		if !ok {
			continue
		}
		var q int64
		for _, g := range used {
			if g.step < r.step && g.at > at {
				q += g.n
			}
		}
		most = max(most, q)
	}
	return float64(most)
}

// add widens the ceiling to a.
func (c *modelCeiling) add(a algo.Algorithm) {
	c.name = a.Name()
	switch a := a.(type) {
	case algo.FixedWindow:
		c.limit, c.window = max(c.limit, a.Limit), int64(a.Window/time.Microsecond)
	case algo.SlidingWindowLog:
		c.limit, c.window = max(c.limit, a.Limit), int64(a.Window/time.Microsecond)
	case algo.SlidingWindowCounter:
		c.limit, c.window = max(c.limit, a.Limit), int64(a.Window/time.Microsecond)
	case algo.TokenBucket:
		c.limit, c.rate, c.cur = max(c.limit, a.Burst), max(c.rate, a.Rate), a.Rate
	case algo.GCRA:
		c.limit, c.rate, c.cur = max(c.limit, a.Burst), max(c.rate, a.Rate), a.Rate
	case algo.LeakyBucket:
		c.limit, c.rate, c.cur = max(c.limit, a.Capacity), max(c.rate, a.Rate), a.Rate
	}
}

// check returns "" when the used grants of h respect the family's bound, else a
// description of the worst violation with its numbers.
//
//   - fixed-window, sliding-counter: every epoch-aligned window holds ≤ Limit (the counter
//     never lets its current window's count past Limit; its sliding estimate is only an
//     estimate, so no sliding bound is claimed for it).
//   - sliding-log: every window (t−Window, t] holds ≤ Limit (its documented exactness).
//   - token-bucket, gcra, leaky-bucket: the permits acting in any [t1, t2] are at most
//     Burst + Rate·(t2−t1) (Capacity for the leaky bucket, as a meter or a queue).
//   - smooth-*: Guava lets one request of any size through and makes the next ones pay, so
//     there is no simple bound: only the cross-store comparison applies.
//
// Charges count as grants do, but a bound is checked only where a grant ends the span
// (a charge itself may pass any limit): the permits granted in a span are at most
// limit + earned − charged, charged being the charges in the span before its last grant
// (with leases in several processes, those that grant could see: see blind).
func (c *modelCeiling) check(key string, h *modelHistory) string {
	used := h.used()
	if len(used) == 0 {
		return ""
	}
	switch c.name {
	case "fixed-window", "sliding-counter", "sliding-log":
		if c.blind {
			if msg := c.checkWindowBlind(used); msg != "" {
				return msg
			}
			used = slices.DeleteFunc(slices.Clone(used), func(g modelGrant) bool { return g.charge })
		}
		if c.name == "sliding-log" {
			return c.checkSliding(used)
		}
		return c.checkAligned(used)
	case "token-bucket", "gcra", "leaky-bucket":
		if c.blind {
			return c.checkBucketBlind(used, c.queued(key, used))
		}
		return c.checkBucket(used, c.queued(key, used), 0)
	}
	return ""
}

func (c *modelCeiling) checkAligned(used []modelGrant) string {
	// In the order the store made them (a charge counts for the grants after it only).
	used = slices.Clone(used)
	slices.SortStableFunc(used, func(a, b modelGrant) int { return a.step - b.step })
	sums := map[int64]int64{}
	for _, g := range used {
		w := floorDivModel(g.at, c.window)
		sums[w] += g.n
		if s := sums[w]; s > c.limit && !g.charge {
			return fmt.Sprintf("%s bound: aligned window #%d [%d, %d) µs holds %d permits > Limit %d; grants in it: %s",
				c.name, w, w*c.window, (w+1)*c.window, s, c.limit, grantsIn(used, w*c.window, (w+1)*c.window))
		}
	}
	return ""
}

func (c *modelCeiling) checkSliding(used []modelGrant) string {
	var sum int64
	i := 0
	for j, g := range used {
		sum += g.n
		for used[i].at <= g.at-c.window {
			sum -= used[i].n
			i++
		}
		// Grants at the same instant as j after it belong to the same window: take the last.
		if j+1 < len(used) && used[j+1].at == g.at && !used[j+1].charge || g.charge {
			continue
		}
		if sum > c.limit {
			return fmt.Sprintf("%s bound: window (%d, %d] µs holds %d permits > Limit %d; grants in it: %s",
				c.name, g.at-c.window, g.at, sum, c.limit, grantsIn(used, g.at-c.window+1, g.at+1))
		}
	}
	return ""
}

// sees reports whether grant g could see e (see blind): every grant, the charges of its
// own process, and the others' charges made before g's permits were counted. When that
// instant is not known (a composite's grant: its Decision.At is not each rule's slice
// At), the others' charges are not counted: their slice may come from before them.
func sees(g, e modelGrant) bool {
	return !e.charge || e.proc == g.proc || g.counted != 0 && e.at < min(g.at, g.counted)
}

// checkWindowBlind is the window families' bound for each grant on what it could see (see
// blind): the window that ends with it (sliding-log), or its aligned window up to it in
// the order the store made them, holds at most Limit. The grants alone are then checked
// as usual by check.
func (c *modelCeiling) checkWindowBlind(used []modelGrant) string {
	for _, g := range used {
		if g.charge {
			continue
		}
		var sum int64
		var from, to int64
		if c.name == "sliding-log" {
			from, to = g.at-c.window+1, g.at+1
		} else {
			w := floorDivModel(g.at, c.window)
			from, to = w*c.window, (w+1)*c.window
		}
		for _, e := range used {
			before := e.step <= g.step
			if c.name == "sliding-log" {
				before = e.at < g.at || e.at == g.at && e.step <= g.step
			}
			if before && e.at >= from && e.at < to && sees(g, e) {
				sum += e.n
			}
		}
		if sum > c.limit {
			return fmt.Sprintf("%s bound: window [%d, %d) µs holds %d permits > Limit %d at step %d (what it could see); grants in it: %s",
				c.name, from, to, sum, c.limit, g.step, grantsIn(used, from, to))
		}
	}
	return ""
}

// checkBucketBlind is checkBucket for each grant on what it could see (see blind): the
// grants before it and the charges that its permits were counted after.
func (c *modelCeiling) checkBucketBlind(used []modelGrant, queued float64) string {
	view := make([]modelGrant, 0, len(used))
	for k, g := range used {
		if g.charge {
			continue
		}
		view = view[:0]
		for _, e := range used[:k] {
			if sees(g, e) {
				view = append(view, e)
			}
		}
		if msg := c.checkBucket(append(view, g), queued, len(view)); msg != "" {
			return msg
		}
	}
	return ""
}

// checkBucket finds the interval [t_i, t_j] (j ≥ from) with the largest excess of permits
// over Rate·(t_j − t_i) in one pass: excess = (S_j − R·t_j) − (S_{i−1} − R·t_i), S the prefix sums.
// Act times are whole µs rounded up from the instant the permits become available, so two
// of them may be up to 1 µs closer than those instants: the bound allows Rate·1µs more.
func (c *modelCeiling) checkBucket(used []modelGrant, queued float64, from int) string {
	base := used[0].at
	r := c.rate / 1e6 // per µs
	var (
		prefix   float64 // permits before grant k
		minStart = 0.0   // min over i ≤ k of prefix_i − r·t_i
		minIdx   = 0
		worst    = -1.0
		wi, wj   int
	)
	for k, g := range used {
		t := float64(g.at - base)
		if s := prefix - r*t; k == 0 || s < minStart {
			minStart, minIdx = s, k
		}
		prefix += float64(g.n)
		if e := prefix - r*t - minStart; e > worst && !g.charge && k >= from {
			worst, wi, wj = e, minIdx, k
		}
	}
	// float64 slack: token sums and x/time/rate's "a deficit under 1 ns is none".
	eps := 1e-6*(1+float64(c.limit)) + 1e-9*c.rate*float64(len(used)) + r
	if worst <= float64(c.limit)+eps+queued {
		return ""
	}
	t1, t2 := used[wi].at, used[wj].at
	var n int64
	for _, g := range used[wi : wj+1] {
		n += g.n
	}
	return fmt.Sprintf("%s bound: %d permits act in [%d, %d] µs (%v) > Burst %d + Rate %g/s × (%v + 1µs) + queued across a raise %g = %.4f; grants in it: %s",
		c.name, n, t1, t2, time.Duration(t2-t1)*time.Microsecond, c.limit, c.rate,
		time.Duration(t2-t1)*time.Microsecond, queued, float64(c.limit)+c.rate*float64(t2-t1+1)/1e6+queued, grantsIn(used, t1, t2+1))
}

// grantsIn lists the used grants acting in [from, to) as n@at(step), at most 12.
func grantsIn(used []modelGrant, from, to int64) string {
	s, k := "", 0
	for _, g := range used {
		if g.at >= from && g.at < to {
			if k++; k > 12 {
				return s + " …"
			}
			kind := ""
			if g.charge {
				kind = "charge "
			}
			s += fmt.Sprintf(" %s%d@%d(step %d)", kind, g.n, g.at, g.step)
		}
	}
	return s
}

// floorDivModel divides rounding towards minus infinity, as the window algorithms do.
func floorDivModel(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
