package algo

import (
	_ "embed" // the Lua twin
	"fmt"
)

// LeakyBucket is a bucket of Capacity units that leaks Rate units per second; a request for
// N pours N units in. It is used two ways:
//
//   - As a meter (MaxWait 0): a request is allowed when its N units fit now
//     (level + N ≤ Capacity). This admits like a token bucket that starts full.
//   - As a shaping queue (MaxWait > 0): the level is the queue ahead of the request, which
//     leaves when that queue has leaked out, so granted requests are spaced evenly at Rate
//     with no burst: Wait = level / Rate. It is granted when it fits in the queue and
//     Wait ≤ MaxWait; a full queue is a denial.
type LeakyBucket struct {
	Rate     float64 // units leaked per second; finite, > 0
	Capacity int64   // most units the bucket holds, and the largest N; ≥ 1
}

// leakyBucketState mirrors the Lua twin's packed state: fields level, last and act.
type leakyBucketState struct {
	valid bool
	level float64 // units in the bucket at last
	last  int64   // µs
	act   int64   // µs at which the latest grant acts (leaves the queue's head)
	rate  float64 // the Rate of the last write; 0 (keys of older versions): the current one
}

// leakyBucketLua is the Lua twin, run after prelude.lua (see Script).
//
//go:embed leaky_bucket.lua
var leakyBucketLua string

// The script is built once: Script returns the same pointer on every call, so a store can
// key its cache of loaded SHA1s by it.
var leakyBucketScript = newScript(LeakyBucket{}.Name(), leakyBucketLua)

// Compile-time checks: LeakyBucket has a Lua twin and a Quota, and its state copies itself.
var (
	_ Scripted    = LeakyBucket{}
	_ quoter      = LeakyBucket{}
	_ StateCloner = (*leakyBucketState)(nil)
)

// Name returns "leaky-bucket".
func (LeakyBucket) Name() string { return "leaky-bucket" }

// Slot returns "lb".
func (LeakyBucket) Slot() string { return "lb" }

// Validate reports a Rate that is not finite and positive or a Capacity outside [1, 2^53].
func (c LeakyBucket) Validate() error {
	if err := checkRate("LeakyBucket.Rate", c.Rate); err != nil {
		return err
	}
	return checkCount("LeakyBucket.Capacity", c.Capacity)
}

// String describes the config.
func (c LeakyBucket) String() string {
	return fmt.Sprintf("leaky-bucket(rate=%g/s, capacity=%d)", c.Rate, c.Capacity)
}

// NewState returns an empty bucket.
func (LeakyBucket) NewState() State { return &leakyBucketState{} }

// CloneState returns a deep copy of the state.
func (s *leakyBucketState) CloneState() State {
	c := *s
	return &c
}

// Script returns the Lua twin of LeakyBucket: one packed string "L" level last act rate at KEYS[1].
func (LeakyBucket) Script() *Script { return leakyBucketScript }

// AppendArgs appends Rate (formatted with %.17g) and Capacity.
func (c LeakyBucket) AppendArgs(args []any) []any {
	return append(args, formatFloat(c.Rate), c.Capacity)
}

// quota returns Capacity per the time Rate takes to drain it (Capacity/Rate seconds).
func (c LeakyBucket) quota() Quota {
	return Quota{Limit: c.Capacity, Window: spanOf(float64(c.Capacity) / c.Rate)}
}

// leak is the rate at which s drains until its next write: the lower of Rate and the rate
// s was written under, as TokenBucket.refill (a rate change never lets more in than if it
// had been applied to every key at once).
func (c LeakyBucket) leak(s *leakyBucketState) float64 {
	if s.rate > 0 && s.rate < c.Rate {
		return s.rate
	}
	return c.Rate
}

// drain returns the level at now and the instant used, which never goes backwards.
func (c LeakyBucket) drain(s *leakyBucketState, now int64) (float64, int64) {
	if !s.valid {
		return 0, now
	}
	if now < s.last {
		now = s.last
	}
	// The explicit conversion forbids a fused multiply-add, which Redis' Lua never does.
	level := s.level - float64(seconds(now-s.last)*c.leak(s))
	if level < 0 {
		level = 0
	}
	return level, now
}

// Apply pours req.N units in if they fit (meter) or if the queue ahead leaks out within
// MaxWait (shaping queue). A Charge pours them in whatever the room (see charge).
func (c LeakyBucket) Apply(st State, now int64, req Request) Decision {
	s := st.(*leakyBucketState)
	if req.Charge {
		return c.charge(s, now, req.N)
	}
	level, at := c.drain(s, now)
	// lag is how far a backwards clock is behind the state: ResetAfter counts from the
	// caller's now, so a store never expires the key before its state is fresh.
	lag := at - now
	capacity := float64(c.Capacity)
	// Until a write stamps the current Rate, the state drains at leak's rate.
	r := c.Rate
	if s.valid {
		r = c.leak(s)
	}
	if req.N > c.Capacity || req.N <= 0 {
		return never(c.Capacity, c.remaining(level), lag+c.untilEmptyFrom(s, at, r))
	}
	// bound is the highest level at which the request is granted.
	bound := capacity - float64(req.N)
	maxWait := req.maxWaitMicros()
	var wait int64
	if maxWait > 0 {
		if q := float64(maxWait) / 1e6 * c.Rate; q < bound {
			bound = q
		}
		wait = ceilMicros(level / c.Rate * 1e6)
	}
	// delay is the wait counted from the caller's now: behind a backwards clock the level is
	// the state's, lag later, so a queued grant leaves lag + wait from now and a denial is
	// retried lag later too. A grant with no wait fits now.
	delay := wait
	if wait > 0 {
		delay += lag
	}
	if level > bound || delay > maxWait {
		// Nothing is written, so it leaks at r. RetryAfter: the first µs at which the same
		// request is granted.
		retry := firstMicro(max(ceilMicros((level-bound)/r*1e6)+lag, 1), 1,
			func(d int64) bool { return c.grantsAt(s, now+d, req) })
		return Decision{Limit: c.Capacity, Remaining: c.remaining(level),
			RetryAfter: toDuration(retry), ResetAfter: toDuration(lag + c.untilEmptyFrom(s, at, r))}
	}
	level += float64(req.N)
	act := at + wait
	if s.valid && s.act > act {
		act = s.act // never moves back, so a refund never gives back more
	}
	s.valid, s.level, s.last, s.act, s.rate = true, level, at, act, c.Rate
	return Decision{Allowed: true, Limit: c.Capacity, Remaining: c.remaining(level),
		ResetAfter: toDuration(lag + c.untilEmptyFrom(s, at, c.Rate)), Wait: toDuration(delay), At: at + wait}
}

// charge pours n units in whatever the room ([Request].Charge): the level rises past
// Capacity by what did not fit, and that debt leaks out at Rate before anything fits again.
// As a meter, a request for N fits once the level is down to Capacity - N; as a shaping
// queue, the queue is full until then (a denial whatever the MaxWait), and a request
// granted after it waits behind what is left. Like TokenBucket.charge it moves no grant's
// instant (act): a charge is not queued, it is what was used.
func (c LeakyBucket) charge(s *leakyBucketState, now, n int64) Decision {
	level, at := c.drain(s, now)
	lag := at - now
	level += float64(n)
	act := at
	if s.valid && s.act > at {
		act = s.act
	}
	s.valid, s.level, s.last, s.act, s.rate = true, level, at, act, c.Rate
	// RetryAfter: the first µs at which one unit fits with no wait, by Apply's admission
	// test on the state as written; estimated as Apply's denial estimates it.
	one, retry := Request{N: 1}, int64(0)
	if !c.grantsAt(s, now, one) {
		retry = firstMicro(max(ceilMicros((level-(float64(c.Capacity)-1))/c.Rate*1e6)+lag, 1), 1,
			func(d int64) bool { return c.grantsAt(s, now+d, one) })
	}
	return Decision{Allowed: true, Limit: c.Capacity, Remaining: c.remaining(level), RetryAfter: toDuration(retry),
		ResetAfter: toDuration(lag + c.untilEmptyFrom(s, at, c.Rate)), At: at}
}

// Refund takes back out of the bucket what x/time/rate's Reservation.CancelAt would give
// back for a grant of n acting at at: n minus the units queued behind it, Rate·(act - at)
// where act is when the latest grant acts, never below zero. So cancelling a place in the
// shaping queue that others wait behind gives nothing back: their times are promised.
// Unlike the token bucket, act never moves back on a refund: the grant before the latest
// acted n' /Rate before it, and n' is not kept; a later act only gives back less.
func (c LeakyBucket) Refund(st State, now int64, n int64, at int64) {
	s := st.(*leakyBucketState)
	if !s.valid || n <= 0 {
		return
	}
	// The explicit conversion forbids a fused multiply-add, which Redis' Lua never does.
	restore := float64(n) - float64(seconds(max(0, s.act-at))*c.Rate)
	if !(restore > 0) {
		return
	}
	level, t := c.drain(s, now)
	level -= restore
	if level < 0 {
		level = 0
	}
	// The state is kept even when empty again: forgetting last would let a clock stepping
	// back before it drain twice over the same span.
	s.level, s.last, s.rate = level, t, c.Rate
}

// remaining is what fits in the bucket now: Capacity - level rounded down, computed as
// Capacity - ceil(level) so that no float64 rounding of the difference (near 2^53) can
// report more room than a request would find.
func (c LeakyBucket) remaining(level float64) int64 {
	if level >= float64(c.Capacity) { // also past 2^63, where a charge may take it
		return 0
	}
	return max(0, c.Capacity-ceilCount(level))
}

// grantsAt reports whether Apply would grant req at now on s as it is: its admission
// test, with its float64 operations.
func (c LeakyBucket) grantsAt(s *leakyBucketState, now int64, req Request) bool {
	level, at := c.drain(s, now)
	bound := float64(c.Capacity) - float64(req.N)
	maxWait := req.maxWaitMicros()
	var delay int64
	if maxWait > 0 {
		if q := float64(maxWait) / 1e6 * c.Rate; q < bound {
			bound = q
		}
		if wait := ceilMicros(level / c.Rate * 1e6); wait > 0 {
			delay = wait + at - now
		}
	}
	return level <= bound && delay <= maxWait
}

// untilEmptyFrom is the time in µs from t (≥ s.last) until s, leaking at r per second, is
// empty by drain's float64 arithmetic: from then on it decides as a fresh bucket.
func (c LeakyBucket) untilEmptyFrom(s *leakyBucketState, t int64, r float64) int64 {
	if !s.valid {
		return 0
	}
	// The explicit conversions forbid a fused multiply-add, which Redis' Lua never does.
	level := max(0, s.level-float64(seconds(t-s.last)*r))
	empty := func(d int64) bool { return s.level-float64(seconds(t+d-s.last)*r) <= 0 }
	return firstMicro(ceilMicros(level/r*1e6), 0, empty)
}

// Samples (see Samples): whole and fractional rates, capacities of 1 to 100.
var _ = sample(
	LeakyBucket{Rate: 10, Capacity: 5},
	LeakyBucket{Rate: 0.5, Capacity: 2},
	LeakyBucket{Rate: 3, Capacity: 1},
	LeakyBucket{Rate: 1000, Capacity: 100},
	LeakyBucket{Rate: 1e6 / 7, Capacity: 3},
)
