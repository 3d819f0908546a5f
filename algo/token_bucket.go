package algo

import (
	_ "embed" // the Lua twin
	"fmt"
	"math"
)

// TokenBucket holds up to Burst tokens and adds Rate tokens per second; a request for N
// takes N tokens. A key starts full. Reservations may drive the bucket into debt (negative
// tokens) that later requests wait behind, as in golang.org/x/time/rate, whose arithmetic
// this type reproduces exactly (same float64 operations on the same instants).
type TokenBucket struct {
	Rate  float64 // tokens added per second; finite, > 0
	Burst int64   // bucket size and the largest N ever granted; ≥ 1
}

// tokenBucketState is the State of a TokenBucket; its zero value is the state of a key
// never seen, as NewState returns it.
//
// It mirrors the Redis state of the Lua twin: fields tokens, last, act, rb and rate (the
// last two packed into mark).
type tokenBucketState struct {
	tokens float64 // tokens at last; may be negative while reservations are outstanding
	last   int64   // µs of the last grant
	act    int64   // µs at which the latest grant acts (x/time/rate's lastEvent)
	// mark packs two flags and a field into one word, so that a state takes 32 bytes, not
	// 48 (a local store holds one per key): 0 for a key never seen (or evicted), whose
	// bucket is full; otherwise its magnitude is the Rate of the last write (olderVersion:
	// unknown, keys of older versions, refilled at the current one) and it is negative
	// when rb: the outstanding grants act each n/Rate after the one before, so act may
	// roll back.
	mark float64
}

// olderVersion is the mark of a state written by a version that did not record its rate.
var olderVersion = math.Inf(1)

func (s *tokenBucketState) valid() bool { return s.mark != 0 }
func (s *tokenBucketState) rb() bool    { return s.mark < 0 }

// rate is the Rate of the last write; 0 when unknown (olderVersion) or never written.
func (s *tokenBucketState) rate() float64 {
	if r := math.Abs(s.mark); r != olderVersion {
		return r
	}
	return 0
}

// stamp records a write under rate (> 0) and the write's rb.
func (s *tokenBucketState) stamp(rate float64, rb bool) {
	s.mark = rate
	if rb {
		s.mark = -rate
	}
}

// tokenBucketLua is the Lua twin, run after prelude.lua (see Script).
//
//go:embed token_bucket.lua
var tokenBucketLua string

// The script is built once: Script returns the same pointer on every call, so a store can
// key its cache of loaded SHA1s by it.
var tokenBucketScript = newScript(TokenBucket{}.Name(), tokenBucketLua)

// Compile-time checks: TokenBucket has a Lua twin and a Quota, and its state copies itself.
var (
	_ Scripted    = TokenBucket{}
	_ quoter      = TokenBucket{}
	_ StateCloner = (*tokenBucketState)(nil)
)

// Name returns "token-bucket".
func (TokenBucket) Name() string { return "token-bucket" }

// Slot returns "tb": a rate change keeps the key's tokens.
func (TokenBucket) Slot() string { return "tb" }

// Validate reports a Rate that is not finite and positive or a Burst outside [1, 2^53].
func (c TokenBucket) Validate() error {
	if err := checkRate("TokenBucket.Rate", c.Rate); err != nil {
		return err
	}
	return checkCount("TokenBucket.Burst", c.Burst)
}

// String describes the config.
func (c TokenBucket) String() string {
	return fmt.Sprintf("token-bucket(rate=%g/s, burst=%d)", c.Rate, c.Burst)
}

// NewState returns a full bucket.
func (TokenBucket) NewState() State { return &tokenBucketState{} }

// CloneState returns a deep copy of the state.
func (s *tokenBucketState) CloneState() State {
	c := *s
	return &c
}

// Script returns the Lua twin of TokenBucket: one packed string "T" tokens last act rb rate
// at KEYS[1].
func (TokenBucket) Script() *Script { return tokenBucketScript }

// AppendArgs appends Rate (formatted with %.17g) and Burst.
func (c TokenBucket) AppendArgs(args []any) []any {
	return append(args, formatFloat(c.Rate), c.Burst)
}

// quota returns Burst per the time Rate takes to refill it (Burst/Rate seconds).
func (c TokenBucket) quota() Quota {
	return Quota{Limit: c.Burst, Window: spanOf(float64(c.Burst) / c.Rate)}
}

// refill is the rate at which s refills until its next write: the lower of Rate and the
// rate s was written under. A store cannot touch every key when the rate changes, so a key
// learns of it at its next call, and the span since its last write is counted at the lower
// rate: never more tokens than golang.org/x/time/rate, which counts it at the old rate up to
// the change (SetLimitAt) and at the new one after.
func (c TokenBucket) refill(s *tokenBucketState) float64 {
	if r := s.rate(); r > 0 && r < c.Rate {
		return r
	}
	return c.Rate
}

// advance returns the tokens at now (never above Burst) and the instant used, which never
// goes backwards.
func (c TokenBucket) advance(s *tokenBucketState, now int64) (float64, int64) {
	burst := float64(c.Burst)
	if !s.valid() {
		return burst, now
	}
	if now < s.last {
		now = s.last
	}
	// The explicit conversion forbids a fused multiply-add, which Redis' Lua never does.
	tokens := s.tokens + float64(seconds(now-s.last)*c.refill(s))
	if tokens > burst {
		tokens = burst
	}
	return tokens, now
}

// Apply takes req.N tokens if they are there now, or (with MaxWait) will be within MaxWait.
// A Charge takes them whatever is left (see charge).
func (c TokenBucket) Apply(st State, now int64, req Request) Decision {
	s := st.(*tokenBucketState)
	if left, until, ok := c.applyFast(s, now, req); ok {
		// The Decision is built here, in Apply's result: returned by applyFast it was
		// stored and copied once more, a seventh of Apply's time.
		d := Decision{Allowed: true, Limit: c.Burst, Remaining: floorCount(left), ResetAfter: toDuration(until), At: now}
		if req.Charge && left < 1 {
			d.RetryAfter = toDuration(c.untilPermit(s, now))
		}
		return d
	}
	if req.Charge {
		return c.charge(s, now, req.N)
	}
	return c.applyTo(s, now, req)
}

// charge takes n tokens at now whatever is left ([Request].Charge). A charge that fits in
// what is left now is the grant AllowN(n) makes, the same transition; one that does not
// takes the bucket below empty, and the debt is earned back at Rate before the next
// permit: it moves no grant's instant (act), and ends act's roll-back (rb), as a refund
// that gives back part of the queue does, since the spacing a roll-back relies on no
// longer holds. Either way RetryAfter is the time until one permit is back.
func (c TokenBucket) charge(s *tokenBucketState, now, n int64) Decision {
	tokens, at := c.advance(s, now)
	left := tokens - float64(n)
	if n <= c.Burst && (left >= 0 || -left/c.Rate*1e9 < 1) { // applyTo's grant with no wait
		d := c.applyTo(s, now, Request{N: n})
		if d.Remaining < 1 {
			d.RetryAfter = toDuration(c.untilPermit(s, now))
		}
		return d
	}
	act := at
	if s.valid() && s.act > at {
		act = s.act
	}
	s.tokens, s.last, s.act = left, at, act
	s.stamp(c.Rate, false)
	return Decision{Allowed: true, Limit: c.Burst, Remaining: floorCount(left), RetryAfter: toDuration(c.untilPermit(s, now)),
		ResetAfter: toDuration(at - now + c.untilFullFrom(s, at, c.Rate)), At: at}
}

// untilPermit is the time in µs from now until one permit is granted with no wait on s as
// it is: 0 when one is now, else the first µs at which grantsAt says so.
func (c TokenBucket) untilPermit(s *tokenBucketState, now int64) int64 {
	one := Request{N: 1}
	if c.grantsAt(s, now, one) {
		return 0
	}
	tokens, at := c.advance(s, now)
	return firstMicro(at-now+ceilMicros((1-tokens)/c.Rate*1e6), 1, func(d int64) bool { return c.grantsAt(s, now+d, one) })
}

// applyFast is applyTo, its usual case written out: a grant with no wait on a state last
// written under the current Rate, with the clock not behind it, by the same float64
// operations on the same values, with the branches that case cannot take left out and no
// division that it does not need (see rollsBack, oneMicro). It returns the tokens left
// and the µs until the bucket is full (the grant's Remaining and ResetAfter), or false,
// having written nothing, for any other case, which applyTo answers.
func (c TokenBucket) applyFast(s *tokenBucketState, now int64, req Request) (left float64, until int64, ok bool) {
	r, n := c.Rate, req.N
	// r in [2^-1000, 1e9] (every valid Rate but the absurdly small): refill is r exactly
	// when the state was written under it, and rollsBack's brackets hold. A zero mark
	// (a state never written) never equals it.
	if !(r >= 0x1p-1000 && r <= 1e9) || s.mark != r && s.mark != -r || now < s.last || n <= 0 || n > c.Burst {
		return 0, 0, false
	}
	burst := float64(c.Burst)
	// advance: at = now, so lag = 0. At now = s.last the refill is s.tokens + 0, which is
	// s.tokens except for -0, which no write leaves (a grant's tokens - n, n ≥ 1, is never
	// -0; a refund adds a positive amount), and only left is used below.
	tokens := s.tokens
	if now != s.last {
		// The explicit conversion forbids a fused multiply-add, which Redis' Lua never does.
		tokens += float64(seconds(now-s.last) * r)
	}
	if tokens > burst {
		tokens = burst
	}
	left = tokens - float64(n)
	if !(left >= 0) { // a wait (or a deficit under 1 ns), or NaN
		return 0, 0, false
	}
	// wait = 0, so act = now; rb as applyTo computes it for a valid state.
	act, rb := now, false
	if s.act >= now {
		act = s.act
	} else {
		rb = c.rollsBack(now, s.act, n)
	}
	s.tokens, s.last, s.act = left, now, act
	s.stamp(r, rb)
	// untilFullFrom(s, now, r), s.tokens being left: its estimate, ceilMicros(def/r*1e6),
	// checked at once when it is 1 µs (the usual answer at high rates) with seconds(1) as a
	// constant. Where def·1e6 is clearly at most r (by a relative 2^-30, far more than the
	// roundings of def/r*1e6), the estimate is 1 with no division: the quotient is then
	// in (0, 1] (def is positive: left ≤ Burst - 1).
	def := burst - min(burst, left)
	if def*1e6*(1+0x1p-30) <= r && def >= 0x1p-1000 {
		until = 1
	} else {
		until = ceilMicros(def / r * 1e6)
	}
	if until != 1 || !(left+float64(oneMicro*r) >= burst) {
		until = c.untilFullFrom(s, now, r)
	}
	return left, until, true
}

// rollsBack is applyTo's float64(now) - c.rollback(n) >= float64(prev) for prev < now, that
// is floor(x) ≤ g with x = n/Rate*1e6 as computed (each operation rounded) and g = now -
// prev, so x < g+1. Where the exact quotient n·1e6/Rate, X, is clearly below or above g+1
// (by a relative 2^-30, far more than the few roundings between x and X), the comparison
// (g+1)·Rate against n·1e6 decides it with multiplications only; the division is done in
// the narrow band between. Its range: Rate in [2^-1000, 1e9] (grantNow's), times in
// [0, 2^52) µs, so that every product is a normal float64 and now, prev and g+1 are exact.
func (c TokenBucket) rollsBack(now, prev, n int64) bool {
	if prev >= 0 && now < 1<<52 && n <= maxExact {
		p := float64(now-prev+1) * c.Rate
		q := float64(n) * 1e6
		if p > q*(1+0x1p-30) {
			return true
		}
		if p < q*(1-0x1p-30) {
			return false
		}
	}
	return float64(now)-c.rollback(n) >= float64(prev)
}

// oneMicro is seconds(1), folded by the compiler: 1000/1e9 rounded once, as seconds rounds
// its one division (TestOneMicro).
const oneMicro = 1000.0 / 1e9

// applyTo is Apply for every case.
func (c TokenBucket) applyTo(s *tokenBucketState, now int64, req Request) Decision {
	tokens, at := c.advance(s, now)
	// lag is how far a backwards clock is behind the state: ResetAfter counts from the
	// caller's now, so a store never expires the key before its state is fresh.
	lag := at - now
	// Until a write stamps the current Rate, the state refills at refill's rate.
	r := c.Rate
	if s.valid() {
		r = c.refill(s)
	}
	if req.N > c.Burst || req.N <= 0 {
		return never(c.Burst, floorCount(tokens), lag+c.untilFullFrom(s, at, r))
	}
	left := tokens - float64(req.N)
	var wait int64
	// A deficit that refills in under a nanosecond is no deficit: x/time/rate truncates
	// its wait to whole nanoseconds, and decisions match it exactly.
	if left < 0 && -left/c.Rate*1e9 >= 1 {
		wait = ceilMicros(-left / c.Rate * 1e6)
	}
	// delay is the wait counted from the caller's now: behind a backwards clock the tokens
	// are counted at the state's instant, lag later, so a queued grant acts lag + wait from
	// now and a denial is retried then. A grant with no wait is taken now, as x/time/rate does.
	delay := wait
	if wait > 0 {
		delay += lag
	}
	if maxWait := req.maxWaitMicros(); delay > maxWait {
		if r != c.Rate { // nothing is written, so the deficit refills at r
			wait = ceilMicros(-left / r * 1e6)
		}
		// Nothing is written on a denial, exactly like x/time/rate. RetryAfter is the first
		// µs at which the same request is granted.
		retry := Never
		if lag+wait < MaxMicros {
			retry = toDuration(firstMicro(lag+wait-maxWait, 1, func(d int64) bool { return c.grantsAt(s, now+d, req) }))
		}
		return Decision{Limit: c.Burst, Remaining: floorCount(tokens), RetryAfter: retry,
			ResetAfter: toDuration(lag + c.untilFullFrom(s, at, r))}
	}
	act := at + wait
	// A refund of this grant may roll act back by its n/Rate only if the grant before it
	// acts no later than that, and so on down the queue: not so after a refund freed part
	// of it, until it has all acted.
	rb := (!s.valid() || s.rb() || s.act <= at) && float64(act)-c.rollback(req.N) >= float64(s.act)
	if s.valid() && s.act >= act {
		act, rb = s.act, false // never moves back, so a refund never gives back more
	}
	s.tokens, s.last, s.act = left, at, act
	s.stamp(c.Rate, rb)
	return Decision{Allowed: true, Limit: c.Burst, Remaining: floorCount(left),
		ResetAfter: toDuration(lag + c.untilFullFrom(s, at, c.Rate)), Wait: toDuration(delay), At: at + wait}
}

// Refund gives back what x/time/rate's Reservation.CancelAt gives back for a grant of n
// acting at at: n minus the tokens reserved after it, Rate·(act - at) where act is when the
// latest grant acts, never below zero and never above Burst. Cancelling a reservation that
// later ones queue behind thus gives back only what they have not already been promised.
// When the refunded grant is the latest, act moves back to when the grant before it acted
// (at - n/Rate), unless that is before now, or that grant acts later (after a refund that
// freed part of the queue, or at the same instant): x/time/rate rolls back then too, and a
// later CancelAt of it gives back more than its n. So act rolls back only while every
// outstanding grant acts n/Rate after the one before it; any other refund that gives back
// something ends that until the queue has acted.
func (c TokenBucket) Refund(st State, now int64, n int64, at int64) {
	s := st.(*tokenBucketState)
	if !s.valid() || n <= 0 {
		return
	}
	// The explicit conversion forbids a fused multiply-add, which Redis' Lua never does.
	restore := float64(n) - float64(seconds(max(0, s.act-at))*c.Rate)
	if !(restore > 0) {
		return
	}
	tokens, t := c.advance(s, now)
	tokens += restore
	if b := float64(c.Burst); tokens > b {
		tokens = b
	}
	// The state is kept even when full again: forgetting last would let a clock stepping
	// back before it refill twice over the same span.
	s.tokens, s.last = tokens, t
	rb := s.rb()
	if at == s.act && rb {
		if back := c.rollback(n); back <= float64(at-t) {
			s.act = at - int64(back)
		}
	} else {
		rb = false
	}
	s.stamp(c.Rate, rb)
}

// rollback is n/Rate in whole µs, rounded down so that an act rolled back by it is never
// before x/time/rate's: later refunds give back no more than it would.
func (c TokenBucket) rollback(n int64) float64 { return math.Floor(float64(n) / c.Rate * 1e6) }

// grantsAt reports whether Apply would grant req at now on s as it is: its admission
// test, with its float64 operations.
func (c TokenBucket) grantsAt(s *tokenBucketState, now int64, req Request) bool {
	tokens, at := c.advance(s, now)
	left := tokens - float64(req.N)
	if left >= 0 || -left/c.Rate*1e9 < 1 {
		return true
	}
	return at-now+ceilMicros(-left/c.Rate*1e6) <= req.maxWaitMicros()
}

// untilFullFrom is the time in µs from t (≥ s.last) until s, refilling at r per second,
// holds Burst tokens by advance's float64 arithmetic: from then on it decides as a fresh
// bucket. A fresh state is full already.
func (c TokenBucket) untilFullFrom(s *tokenBucketState, t int64, r float64) int64 {
	if !s.valid() {
		return 0
	}
	burst := float64(c.Burst)
	// The explicit conversions forbid a fused multiply-add, which Redis' Lua never does.
	// At t = s.last (every grant asks so) the refill is s.tokens + 0: skipped.
	tokens := s.tokens
	if t != s.last {
		tokens += float64(seconds(t-s.last) * r)
	}
	d := ceilMicros((burst - min(burst, tokens)) / r * 1e6)
	// The estimate is almost always the answer: checked here, with no closure call, it is
	// what firstMicro returns (firstMicro moves d only when full(d-1) or !full(d)). Allow's
	// fast path runs this on every grant. At t = s.last, full(0) is s.tokens ≥ Burst, which
	// d ≥ 1 rules out (the deficit Burst - tokens is positive): d = 1 needs one check.
	if d < MaxMicros && (d == 0 || d == 1 && t == s.last || !c.fullAt(s, t+d-1, r)) && c.fullAt(s, t+d, r) {
		return d
	}
	return c.firstFull(s, t, r, d)
}

// firstFull is untilFullFrom's answer when its estimate d is off: firstMicro corrects it.
// It is a call of its own, so that untilFullFrom sets up no closure.
//
//go:noinline
func (c TokenBucket) firstFull(s *tokenBucketState, t int64, r float64, d int64) int64 {
	return firstMicro(d, 0, func(d int64) bool { return c.fullAt(s, t+d, r) })
}

// fullAt reports whether s, refilling at r per second, holds Burst tokens at t (≥ s.last)
// by advance's float64 arithmetic.
func (c TokenBucket) fullAt(s *tokenBucketState, t int64, r float64) bool {
	// The explicit conversion forbids a fused multiply-add, which Redis' Lua never does.
	return s.tokens+float64(seconds(t-s.last)*r) >= float64(c.Burst)
}

// Samples (see Samples): whole and fractional rates, intervals that are not whole µs
// (1e6/7), bursts of 1 to thousands.
var _ = sample(
	TokenBucket{Rate: 10, Burst: 5},
	TokenBucket{Rate: 0.5, Burst: 1},
	TokenBucket{Rate: 3, Burst: 2},
	TokenBucket{Rate: 1000, Burst: 100},
	TokenBucket{Rate: 1e6 / 7, Burst: 3},
	TokenBucket{Rate: 0.01, Burst: 5000},
)
