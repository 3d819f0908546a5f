package algo

import (
	_ "embed" // the Lua twin
	"fmt"
	"math"
)

// GCRA is the generic cell rate algorithm: one theoretical arrival time (TAT) per key.
// Requests are spaced by the emission interval T, and up to Burst may arrive at once.
//
// GCRA works in whole µs, T being 1e6/Rate µs rounded up, so it admits exactly what a
// TokenBucket with Burst and rate 1e6/T admits: Rate itself when 1e6/Rate is a whole number,
// otherwise a rate lower by less than one part in T (under 0.1% up to 1000 permits per
// second). Prefer a TokenBucket for high rates whose interval is not a whole number of µs;
// docs/algorithms.md ("GCRA") says why the TAT is kept in whole µs.
type GCRA struct {
	Rate  float64 // permits per second; finite, > 0 and at most 1e6
	Burst int64   // permits that may arrive at once, and the largest N; ≥ 1, Burst·T ≤ MaxMicros
}

// maxGCRARate is the largest Rate, whose interval is 1µs: any higher rate would be served
// as 1e6 per second.
const maxGCRARate = 1e6

// gcraState mirrors the Lua twin's packed state: fields tat, act and iv.
type gcraState struct {
	valid bool
	tat   float64 // the theoretical arrival time, whole µs
	act   int64   // µs at which the latest grant acts (x/time/rate's lastEvent)
	iv    float64 // the interval tat was written under, µs; 0 (keys of older versions): the current one
	rb    bool    // the outstanding grants act each n·T after the one before: act may roll back
	last  int64   // µs of the last write
	burst int64   // the Burst tat was written under; 0 (keys of older versions): the current one
}

// gcraLua is the Lua twin, run after prelude.lua (see Script).
//
//go:embed gcra.lua
var gcraLua string

// The script is built once: Script returns the same pointer on every call, so a store can
// key its cache of loaded SHA1s by it.
var gcraScript = newScript(GCRA{}.Name(), gcraLua)

// Compile-time checks: GCRA has a Lua twin and a Quota, and its state copies itself.
var (
	_ Scripted    = GCRA{}
	_ quoter      = GCRA{}
	_ StateCloner = (*gcraState)(nil)
)

// Name returns "gcra".
func (GCRA) Name() string { return "gcra" }

// Slot returns "gcra": a rate change keeps the key's TAT.
func (GCRA) Slot() string { return "gcra" }

// Validate reports a Rate that is not finite and positive or above 1e6 per second, a
// Burst outside [1, 2^53], or a Burst whose Burst·T exceeds MaxMicros (the TAT then stays
// far below 2^53 µs, where float64 holds whole µs exactly).
func (c GCRA) Validate() error {
	if err := checkRate("GCRA.Rate", c.Rate); err != nil {
		return err
	}
	if c.Rate > maxGCRARate {
		return fmt.Errorf("%w: GCRA.Rate must be at most 1e6 per second (one permit per µs), got %v",
			ErrInvalidConfig, c.Rate)
	}
	if err := checkCount("GCRA.Burst", c.Burst); err != nil {
		return err
	}
	if float64(c.Burst)*c.interval() > float64(MaxMicros) {
		return fmt.Errorf("%w: GCRA.Burst times the interval 1e6/GCRA.Rate must be at most %d µs, got %d at %v/s",
			ErrInvalidConfig, MaxMicros, c.Burst, c.Rate)
	}
	return nil
}

// String describes the config.
func (c GCRA) String() string { return fmt.Sprintf("gcra(rate=%g/s, burst=%d)", c.Rate, c.Burst) }

// NewState returns the state of an idle key.
func (GCRA) NewState() State { return &gcraState{} }

// CloneState returns a deep copy of the state.
func (s *gcraState) CloneState() State {
	c := *s
	return &c
}

// Script returns the Lua twin of GCRA: one packed string "G" tat act iv rb last burst at KEYS[1].
func (GCRA) Script() *Script { return gcraScript }

// AppendArgs appends Rate (formatted with %.17g) and Burst.
func (c GCRA) AppendArgs(args []any) []any {
	return append(args, formatFloat(c.Rate), c.Burst)
}

// quota returns Burst per Burst/Rate seconds.
func (c GCRA) quota() Quota { return Quota{Limit: c.Burst, Window: spanOf(float64(c.Burst) / c.Rate)} }

// interval is the emission interval in whole µs: 1e6/Rate rounded up, so that GCRA never
// admits more than Rate.
func (c GCRA) interval() float64 { return math.Ceil(1e6 / c.Rate) }

// tat returns the key's TAT, never earlier than now. A TAT written under another interval
// is rescaled to this one, as a token bucket keeps its tokens across a rate change (and as
// package smooth rescales in setRate): the permits it holds ahead are spaced by the current
// interval, rounded up to whole µs and bounded so that the TAT stays exact. A store cannot
// touch every key when the rate changes, so the time since the last write is counted at
// the lower of the two rates, as TokenBucket.refill does: with a lower rate (a longer
// interval) the permits held at the last write are rescaled from then, with a higher one
// those still held now are rescaled from now.
func (c GCRA) tat(s *gcraState, now int64) float64 {
	t := float64(now)
	if !s.valid {
		return t
	}
	tat := s.tat
	if iv := c.interval(); s.iv != 0 && s.iv != iv && s.tat > float64(s.last) {
		from := t
		if iv > s.iv || from < float64(s.last) {
			from = float64(s.last)
		}
		if s.tat > from {
			tat = from + math.Ceil((s.tat-from)/s.iv*iv)
			if top := t + float64(MaxMicros) + float64(c.Burst)*iv; tat > top {
				tat = top // already a wait of MaxMicros or more: never granted
			}
		}
	}
	// The TAT counts what is taken from Burst: a Burst change keeps the permits available
	// (Burst - ahead/T), as x/time/rate's SetBurst keeps its tokens, by moving the TAT by
	// the difference. An idle key (TAT passed) is fresh: its store has expired it.
	if s.burst != 0 && s.burst != c.Burst && tat > t {
		tat += float64(c.Burst-s.burst) * c.interval()
	}
	if tat > t {
		return tat
	}
	return t
}

// Apply admits req.N if the TAT pushed forward by N·T stays within Burst·T of now (or, with
// MaxWait, will within MaxWait). A Charge pushes it forward whatever is left (see charge).
func (c GCRA) Apply(st State, now int64, req Request) Decision {
	s := st.(*gcraState)
	t := c.interval()
	// Behind a clock that stepped back before the last write, a TAT rescaled to another
	// interval or Burst would extrapolate the permits held at that write backwards at the
	// new spacing, looser than the old one: the decision is made at the write's instant, as
	// the buckets make theirs, and lag (how far that is ahead) counts into the durations.
	var lag int64
	if s.valid && now < s.last && (s.iv != 0 && s.iv != t || s.burst != 0 && s.burst != c.Burst) {
		lag, now = s.last-now, s.last
	}
	tat := c.tat(s, now)
	if req.Charge {
		return c.charge(s, now, lag, tat, req.N)
	}
	ahead := tat - float64(now) // ≥ 0, and exact: how far the TAT is ahead of now
	if req.N > c.Burst || req.N <= 0 {
		return never(c.Burst, c.remaining(ahead), lag+c.untilFresh(s, now, ahead))
	}
	// N fits once ahead has come down to (Burst-N)·T. All of these are whole µs.
	wait := ceilMicros(ahead - float64(c.Burst-req.N)*t)
	delay := wait // from the caller's now, as in TokenBucket.Apply
	if wait > 0 {
		delay += lag
	}
	if maxWait := req.maxWaitMicros(); delay > maxWait {
		return Decision{Limit: c.Burst, Remaining: c.remaining(ahead),
			RetryAfter: retryAfter(lag+wait, maxWait), ResetAfter: toDuration(lag + c.untilFresh(s, now, ahead))}
	}
	act := now + wait
	// As in TokenBucket.Apply.
	rb := (!s.valid || s.rb || s.act <= now) && float64(act)-float64(req.N)*t >= float64(s.act)
	if s.valid && s.act >= act {
		act, rb = s.act, false // never moves back, so a refund never gives back more
	}
	s.valid, s.tat, s.act, s.iv, s.rb, s.last, s.burst = true, tat+float64(req.N)*t, act, t, rb, now, c.Burst
	ahead = s.tat - float64(now)
	return Decision{Allowed: true, Limit: c.Burst, Remaining: c.remaining(ahead),
		ResetAfter: toDuration(lag + ceilMicros(ahead)), Wait: toDuration(delay), At: now + wait}
}

// charge moves the TAT n intervals past max(TAT, now) whatever is left ([Request].Charge),
// at the instant Apply decides at (now, lag as Apply computes them; tat = c.tat(s, now)):
// the TAT more than Burst·T ahead is debt, earned back at one interval per permit before
// the next permit. The TAT is capped at now + MaxMicros + Burst·T, as tat caps a rescaled
// one: a TAT that far ahead is a wait of MaxMicros or more for any request, never
// granted, and below the cap every sum stays a whole number of µs under 2^53. Like
// TokenBucket.charge it moves no grant's instant (act) and ends act's roll-back (rb).
func (c GCRA) charge(s *gcraState, now, lag int64, tat float64, n int64) Decision {
	t := c.interval()
	tat += float64(n) * t
	if top := float64(now) + float64(MaxMicros) + float64(c.Burst)*t; tat > top {
		tat = top
	}
	act := now
	if s.valid && s.act > now {
		act = s.act
	}
	s.valid, s.tat, s.act, s.iv, s.rb, s.last, s.burst = true, tat, act, t, false, now, c.Burst
	// The state as written decides the next request at the caller's instant with no lag
	// (its interval and Burst are the current ones), so the TAT is counted from there:
	// Remaining and RetryAfter are what Apply answers then (exact, whole µs).
	ahead := tat - float64(now-lag)
	return Decision{Allowed: true, Limit: c.Burst, Remaining: c.remaining(ahead),
		RetryAfter: retryAfter(ceilMicros(ahead-float64(c.Burst-1)*t), 0),
		ResetAfter: toDuration(ceilMicros(ahead)), At: now}
}

// untilFresh is the ResetAfter of a decision that writes nothing: how long s takes to be
// fresh, ahead being how far its TAT is ahead of now. While a raised rate is not yet
// written, tat rescales what is held from now, so ahead shrinks at the old rate and the
// state is fresh only when its stored TAT has passed: ahead would understate that, and a
// store would forget a state that still decides (Redis keeps the TTL of the last write).
func (c GCRA) untilFresh(s *gcraState, now int64, ahead float64) int64 {
	if s.valid && s.iv != 0 && c.interval() < s.iv && s.tat-float64(now) > ahead {
		return ceilMicros(s.tat - float64(now))
	}
	return ceilMicros(ahead)
}

// remaining is how many single permits fit while the TAT is ahead µs ahead of now:
// (Burst·T - ahead)/T rounded down, exact since Burst·T ≤ MaxMicros.
func (c GCRA) remaining(ahead float64) int64 {
	t := c.interval()
	return floorCount((float64(c.Burst)*t - ahead) / t)
}

// Refund gives back what x/time/rate's Reservation.CancelAt gives back for a grant of n
// acting at at, with GCRA as a token bucket of rate 1e6/T: n minus the permits reserved
// after it, (act - at)/T where act is when the latest grant acts, never below zero. The TAT
// moves back by n·T - (act - at) µs, never before now (exact: all whole µs). When the
// refunded grant is the latest, act moves back to at - n·T, once, under the conditions of
// TokenBucket.Refund.
func (c GCRA) Refund(st State, now int64, n int64, at int64) {
	s := st.(*gcraState)
	if !s.valid || n <= 0 {
		return
	}
	t := c.interval()
	back := float64(n)*t - float64(max(0, s.act-at))
	if !(back > 0) {
		return
	}
	tat := c.tat(s, now) - back
	if f := float64(now); tat < f {
		tat = f
	}
	s.tat, s.iv, s.last, s.burst = tat, t, now, c.Burst
	if at == s.act && s.rb {
		if prev := float64(at) - float64(n)*t; prev >= float64(now) {
			s.act = int64(prev)
		}
	} else {
		s.rb = false
	}
}

// Samples (see Samples): whole and fractional rates, intervals that are not whole µs,
// bursts of 1 to thousands.
var _ = sample(
	GCRA{Rate: 10, Burst: 5},
	GCRA{Rate: 0.5, Burst: 1},
	GCRA{Rate: 3, Burst: 2},
	GCRA{Rate: 1000, Burst: 100},
	GCRA{Rate: 1e6 / 7, Burst: 3},
	GCRA{Rate: 0.01, Burst: 5000},
)
