package algo

import (
	_ "embed" // the Lua twins' shared part
	"fmt"
	"math"
)

// This file holds what SmoothBursty and SmoothWarmingUp share: the state, Guava's
// SmoothRateLimiter arithmetic (resync, reserveEarliestAvailable, doSetRate) and the
// Decision fields. Every float operation is Guava's, in Guava's order, on the same
// operands, so the waits come out identical to the microsecond; the Lua twins
// (smooth.lua, shared by smooth_bursty.lua and smooth_warming_up.lua) repeat the same
// operations.
//
// Go may fuse x*y+z (or x*y−z) into one FMA instruction on some architectures (arm64,
// ppc64le, s390x), even across statements, which rounds once instead of twice and would
// differ from Java and Lua; every product that later meets an addition or a subtraction
// is wrapped in float64(), which forbids the fusion.

// Bounds of the smooth configs. They keep every intermediate value of Guava's formulas
// finite (no overflow to ±Inf, no NaN) for every accepted config: with the rate in
// [smoothMinRate, smoothMaxRate] the stable interval lies in [1e-9, 1e21] µs.
const (
	smoothMinRate         = 1e-15 // about one permit per 31.7 million years
	smoothMaxRate         = 1e15  // permits per second (Guava has no bound; beyond, use +Inf)
	smoothMaxBurstSeconds = 1e9   // about 31.7 years of saved-up permits
	smoothMaxColdFactor   = 1e6
)

// smoothLinger is how long a state that is not exactly a fresh one is kept once it would
// otherwise be forgotten (µs): a SmoothBursty key after it is full, and a key of either kind
// while its rate is +Inf. See SmoothBursty for why.
const smoothLinger int64 = 60_000_000

// smoothConfig is a normalized SmoothBursty or SmoothWarmingUp (defaults applied, Warmup in
// whole µs): the parameters a state remembers, so that a change of config can be applied
// the way Guava's setRate applies one.
type smoothConfig struct {
	warm   bool    // SmoothWarmingUp
	rate   float64 // permits per second, +Inf allowed
	burst  float64 // SmoothBursty.MaxBurstSeconds, 0 normalized to 1
	warmup int64   // SmoothWarmingUp.Warmup in whole µs
	cold   float64 // SmoothWarmingUp.ColdFactor, 0 normalized to 3
}

// smoothParams are the quantities Guava derives from a config in doSetRate.
type smoothParams struct {
	warm      bool
	inf       bool    // rate +Inf: every permit is free
	interval  float64 // stableIntervalMicros = 1e6 / rate (0 when inf)
	max       float64 // maxPermits (+Inf when inf)
	coolDown  float64 // coolDownIntervalMicros: µs of idleness that store one permit
	threshold float64 // SmoothWarmingUp: thresholdPermits
	slope     float64 // SmoothWarmingUp: interval added per stored permit above threshold
}

// smoothState is the state of one SmoothBursty or SmoothWarmingUp key. It mirrors the
// Redis state of the Lua twins: stored, next and the config fields.
type smoothState struct {
	valid  bool         // false for a key never seen (or forgotten)
	stored float64      // storedPermits
	next   int64        // nextFreeTicketMicros, µs since the Unix epoch
	cfg    smoothConfig // the config the state was last brought up to date with
}

// smoothLua is what both Lua twins share, as this file is for the Go transitions: each
// script is prelude.lua, then smooth.lua, then the algorithm's own file.
//
//go:embed smooth.lua
var smoothLua string

// Compile-time checks: the smooth state copies itself and carries itself across a change
// of config.
var (
	_ StateCloner   = (*smoothState)(nil)
	_ ConfigCarrier = (*smoothState)(nil)
)

// CloneState returns a deep copy of the state.
func (s *smoothState) CloneState() State {
	c := *s
	return &c
}

// CarriesConfig returns true: the state records its config and a request under another one
// applies the change as Guava's setRate does, so a store keeps the state across it.
func (s *smoothState) CarriesConfig() bool { return true }

// params computes Guava's derived quantities. The special cases are those of a +Inf rate
// (stable interval 0: every permit is free) and of a warm-up of 0 µs, whose maxPermits is
// 0 and whose coolDown (0/0) is never used.
func (c smoothConfig) params() smoothParams {
	if math.IsInf(c.rate, 1) {
		return smoothParams{warm: c.warm, inf: true, max: math.Inf(1)}
	}
	p := smoothParams{warm: c.warm, interval: 1e6 / c.rate}
	if !c.warm {
		p.max = float64(c.burst * c.rate)
		p.coolDown = p.interval
		return p
	}
	w := float64(c.warmup)
	coldInterval := float64(p.interval * c.cold)
	p.threshold = 0.5 * w / p.interval
	p.max = p.threshold + 2.0*w/(p.interval+coldInterval)
	if p.max > p.threshold {
		p.slope = (coldInterval - p.interval) / (p.max - p.threshold)
	}
	p.coolDown = w / p.max
	return p
}

// checkSmoothRate accepts +Inf and finite rates in [smoothMinRate, smoothMaxRate].
func checkSmoothRate(field string, r float64) error {
	if math.IsInf(r, 1) {
		return nil
	}
	if math.IsNaN(r) || r <= 0 {
		return fmt.Errorf("%w: %s must be > 0 (or +Inf), got %v", ErrInvalidConfig, field, r)
	}
	if r < smoothMinRate || r > smoothMaxRate {
		return fmt.Errorf("%w: %s must be +Inf or in [%g, %g] per second, got %v",
			ErrInvalidConfig, field, float64(smoothMinRate), float64(smoothMaxRate), r)
	}
	return nil
}

// truncMicros is Java's (long) cast of a non-negative double (truncation; NaN gives 0),
// saturated at MaxMicros instead of Long.MAX_VALUE.
func truncMicros(x float64) int64 {
	if !(x > 0) {
		return 0
	}
	if x >= float64(MaxMicros) {
		return MaxMicros
	}
	return int64(x)
}

// applySmooth is the transition shared by both kinds: bring the state up to date with cfg
// (creating it, or applying a config change as Guava's setRate does), then answer req the
// way Guava's tryAcquire(n, timeout) does, or record a charge (see charge).
func applySmooth(s *smoothState, cfg smoothConfig, now int64, req Request) Decision {
	p := cfg.params()
	if !s.valid {
		// Guava's constructor followed by setRate at now: nextFreeTicket = now, and
		// storedPermits 0 (bursty) or maxPermits (warming up: "initial state is cold").
		*s = smoothState{valid: true, next: now, cfg: cfg}
		if cfg.warm && !p.inf {
			s.stored = p.max
		}
	} else if s.cfg != cfg {
		old := s.cfg.params()
		s.resync(now, old)
		s.rescale(old, p)
		s.cfg = cfg
	}
	limit := p.limit()
	if req.N <= 0 || req.N > maxExact {
		v := *s
		v.resync(now, p)
		return never(limit, v.remaining(now, p), v.resetAfter(now, p))
	}
	if req.Charge {
		return s.charge(now, float64(req.N), p, limit)
	}
	// canAcquire: nextFreeTicket - timeout <= now. Nothing is written on a denial, as in
	// Guava (where the resync a reservation would do is a no-op then: now < next).
	wait := max(s.next-now, 0)
	if maxWait := req.maxWaitMicros(); wait > maxWait {
		return Decision{Limit: limit, RetryAfter: retryAfter(wait, maxWait),
			ResetAfter: toDuration(s.resetAfter(now, p))}
	}
	s.resync(now, p)
	s.reserve(now, float64(req.N), p)
	return Decision{Allowed: true, Limit: limit, Remaining: s.remaining(now, p),
		ResetAfter: toDuration(s.resetAfter(now, p)), Wait: toDuration(wait), At: now + wait}
}

// charge records n permits as used at now ([Request].Charge): Guava's acquire(n) without
// its sleep. The charge spends stored permits first and pushes nextFreeTicket by the cost
// of the rest, as a grant does, whatever reservations are pending (the next caller pays);
// the charging caller waits for none of them, having already done its work. RetryAfter is
// the wait of a later tryAcquire(1): until nextFreeTicket. At is now: the smooth state
// keeps no instant of its own but nextFreeTicket.
func (s *smoothState) charge(now int64, n float64, p smoothParams, limit int64) Decision {
	s.resync(now, p)
	s.reserve(now, n, p)
	return Decision{Allowed: true, Limit: limit, Remaining: s.remaining(now, p), RetryAfter: toDuration(s.next - now),
		ResetAfter: toDuration(s.resetAfter(now, p)), At: now}
}

// resync is Guava's resync: if nextFreeTicket is in the past, the idle time since then
// becomes stored permits (capped at maxPermits) and nextFreeTicket moves to now. An earlier
// now changes nothing.
func (s *smoothState) resync(now int64, p smoothParams) {
	if now <= s.next {
		return
	}
	switch {
	case p.inf:
		s.stored = 0 // Guava's value is +Inf or NaN; at a +Inf rate it is never read
	case p.max > 0:
		x := s.stored + float64(now-s.next)/p.coolDown
		if x > p.max {
			x = p.max
		}
		s.stored = x
	}
	s.next = now
}

// rescale is the rest of Guava's doSetRate, after the resync: storedPermits keep their
// proportion of maxPermits, with Guava's special cases for an old maxPermits of +Inf and
// of 0.
func (s *smoothState) rescale(old, p smoothParams) {
	switch {
	case old.inf:
		// Guava: bursty refills to the new maxPermits, warming up starts hot (0).
		s.stored = 0
		if !p.warm && !p.inf {
			s.stored = p.max
		}
	case old.max == 0:
		// Guava takes maxPermits 0 for its initial state: empty (bursty) or cold.
		s.stored = 0
		if p.warm && !p.inf {
			s.stored = p.max
		}
	case p.inf:
		s.stored = 0 // Guava's value is +Inf or NaN; at a +Inf rate it is never read
	default:
		s.stored = s.stored * p.max / old.max
	}
}

// reserve is Guava's reserveEarliestAvailable after its resync: it spends min(n, stored)
// stored permits (costing storedCost) and the rest as fresh permits (n_fresh ×
// stableInterval, truncated to whole µs), and pushes nextFreeTicket forward by the total.
// Guava saturates at Long.MAX_VALUE; here nextFreeTicket stays within MaxMicros of now
// (a wait that long is reported as Never).
func (s *smoothState) reserve(now int64, n float64, p smoothParams) {
	spend := n
	if s.stored < n {
		spend = s.stored
	}
	fresh := n - spend
	cost := min(p.storedCost(s.stored, spend)+truncMicros(fresh*p.interval), MaxMicros)
	s.next += cost
	if limit := now + MaxMicros; s.next > limit {
		s.next = limit
	}
	s.stored -= spend
}

// storedCost is Guava's storedPermitsToWaitTime(stored, k): 0 for SmoothBursty; for
// SmoothWarmingUp the area under the interval function between stored-k and stored: a
// trapezoid for the permits above thresholdPermits, then stableInterval per permit below.
func (p smoothParams) storedCost(stored, k float64) int64 {
	if !p.warm || p.inf {
		return 0
	}
	var micros int64
	if above := stored - p.threshold; above > 0 {
		take := k
		if above < k {
			take = above
		}
		length := p.permitsToTime(above) + p.permitsToTime(above-take)
		micros = truncMicros(take * length / 2.0)
		k -= take
	}
	return micros + truncMicros(p.interval*k)
}

// permitsToTime is the interval function of SmoothWarmingUp at x permits above the
// threshold: stableInterval + x × slope.
func (p smoothParams) permitsToTime(x float64) float64 {
	return p.interval + float64(x*p.slope)
}

// limit is Decision.Limit: maxPermits rounded up, 1 when maxPermits is 0 (a first request
// is always granted), 2^53 for a +Inf rate or beyond.
func (p smoothParams) limit() int64 {
	if p.inf || p.max >= maxExact {
		return maxExact
	}
	if l := int64(math.Ceil(p.max)); l > 0 {
		return l
	}
	return 1
}

// remaining is Decision.Remaining: the whole stored permits while no reservation is
// pending (nextFreeTicket ≤ now), else 0; 2^53 for a +Inf rate.
func (s *smoothState) remaining(now int64, p smoothParams) int64 {
	switch {
	case s.next > now:
		return 0
	case p.inf:
		return maxExact
	default:
		return floorCount(s.stored)
	}
}

// resetAfter is Decision.ResetAfter in µs: until pending reservations are over and the
// stored permits are back to maxPermits, at which point a SmoothWarmingUp state equals a
// fresh (cold) one; plus smoothLinger for the states that a fresh one does not reproduce
// (a full SmoothBursty, which a fresh key would restart empty, and a +Inf rate, which a
// later rate change treats specially).
func (s *smoothState) resetAfter(now int64, p smoothParams) int64 {
	reset := max(s.next-now, 0)
	if !p.inf && p.max > 0 && s.stored < p.max {
		reset += s.untilFull(p)
	}
	if !p.warm || p.inf {
		reset += smoothLinger
	}
	return reset
}

// untilFull is the least whole number d of µs of idleness after nextFreeTicket for which
// resync fills the state: stored + d/coolDown ≥ maxPermits in float arithmetic. It starts
// from the rounded-up real quotient and corrects it by the few µs rounding can cost.
func (s *smoothState) untilFull(p smoothParams) int64 {
	x := (p.max - s.stored) * p.coolDown
	if !(x < float64(MaxMicros)) {
		return MaxMicros
	}
	full := func(d int64) bool { return s.stored+float64(d)/p.coolDown >= p.max }
	d := ceilMicros(x)
	for i := 0; i < 64 && d > 0 && full(d-1); i++ {
		d--
	}
	for i := 0; i < 64 && !full(d); i++ {
		d++
	}
	return d
}
