package algo

import (
	_ "embed" // the Lua twin
	"fmt"
	"math"
)

// SmoothBursty is Guava's RateLimiter.create(Rate) (SmoothRateLimiter.SmoothBursty): permits
// are handed out one every 1/Rate seconds, and the time a key stays unused is saved up as
// stored permits, at most MaxBurstSeconds × Rate of them, which later requests take at no
// cost (a burst). The waits are Guava's to the microsecond.
//
// State, as in Guava: storedPermits (a float), nextFreeTicket (µs) and the config last
// applied. Every request first resyncs: if now > nextFreeTicket, storedPermits +=
// (now − nextFreeTicket) / stableInterval, capped at maxPermits, and nextFreeTicket = now.
// A request for N then waits max(nextFreeTicket − now, 0), computed before it: it pays for
// the request before it, never for itself, so the first request is never delayed and a
// large request makes the next caller wait. It spends min(N, storedPermits) stored
// permits for free and the rest as fresh permits, pushing nextFreeTicket forward by
// (long)(fresh × stableInterval) µs. A new key starts with no stored permits and
// nextFreeTicket = now.
//
// Request.MaxWait is Guava's tryAcquire timeout: 0 is tryAcquire(N) (granted only if
// nextFreeTicket ≤ now); d > 0 is tryAcquire(N, d), denied without reserving anything when
// nextFreeTicket − d > now; Forever is acquire(N), always granted. Decision.Wait is the wait
// to sleep, At = now + Wait, and a denial's RetryAfter is nextFreeTicket − MaxWait − now.
// Waits saturate at MaxMicros (about 31.7 years), where Guava saturates at 2^63 µs: such a
// wait is reported as RetryAfter == Never. N above 2^53 is never granted.
//
// Limit is ceil(maxPermits) (1 when maxPermits rounds to 0). Remaining is the whole
// stored permits left when no reservation is pending, else 0: it is not a bound, since
// a request arriving while nothing is pending is granted whatever its size.
//
// Config changes are Guava's setRate. The state remembers the config it was last brought up
// to date with; a request with a different config (same Slot, so the same key) first
// resyncs with the old one, then rescales storedPermits by maxPermits_new / maxPermits_old,
// with Guava's special cases (after a +Inf rate the key is full, after a maxPermits of 0
// it is empty). A change of MaxBurstSeconds, which Guava cannot make, is applied the same
// way. A request that can never be granted (N > 2^53) still applies the change: package
// smooth uses one to apply SetRate at the instant it is called, as Guava does.
//
// Rate may be +Inf, as in Guava: every permit is then free (waits are only those of
// reservations made before the rate became infinite) and Limit and Remaining are 2^53.
//
// Expiry: a fresh key is empty, but an idle key fills up to maxPermits and stays full,
// so an idle key never becomes equal to a fresh one. Forgetting a full key makes it restart
// empty, which never admits more than Guava would (it forgets the burst), so ResetAfter is
// the time until the key is full plus one minute (smoothLinger): a burst saved up by a key
// idle for less than its refill time plus a minute is kept, memory stays bounded by the
// keys used in the last minute or so. With a private store that never forgets its key
// (package smooth's default), every burst is kept, as in Guava.
//
// Refund does nothing: Guava has no way to return permits (later reservations were already
// placed after this one).
type SmoothBursty struct {
	Rate            float64 // permits per second; +Inf, or in [1e-15, 1e15]
	MaxBurstSeconds float64 // seconds of unused rate saved up as stored permits; 0 means 1, else in (0, 1e9]
}

// smoothBurstyLua is the Lua twin, run after prelude.lua and smooth.lua (see Script).
//
//go:embed smooth_bursty.lua
var smoothBurstyLua string

// The script is built once: Script returns the same pointer on every call, so a store can
// key its cache of loaded SHA1s by it.
var smoothBurstyScript = newScript(SmoothBursty{}.Name(), smoothLua+"\n"+smoothBurstyLua)

// Compile-time checks: SmoothBursty has a Lua twin and a Quota.
var (
	_ Scripted = SmoothBursty{}
	_ Quoter   = SmoothBursty{}
)

// Name returns "smooth-bursty".
func (SmoothBursty) Name() string { return "smooth-bursty" }

// Slot returns "smb": a rate change keeps the key's state and is applied like Guava's setRate.
func (SmoothBursty) Slot() string { return "smb" }

// Validate reports a Rate that is NaN, not positive, or finite outside [1e-15, 1e15], and a
// MaxBurstSeconds that is negative, not finite, or above 1e9.
func (c SmoothBursty) Validate() error {
	if err := checkSmoothRate("SmoothBursty.Rate", c.Rate); err != nil {
		return err
	}
	if b := c.MaxBurstSeconds; math.IsNaN(b) || b < 0 || b > smoothMaxBurstSeconds {
		return fmt.Errorf("%w: SmoothBursty.MaxBurstSeconds must be in (0, %g] (0 means 1), got %v",
			ErrInvalidConfig, float64(smoothMaxBurstSeconds), b)
	}
	return nil
}

// String describes the config.
func (c SmoothBursty) String() string {
	return fmt.Sprintf("smooth-bursty(rate=%g/s, max-burst=%gs)", c.Rate, c.config().burst)
}

// NewState returns the state of a key never seen: empty, created at its first request.
func (SmoothBursty) NewState() State { return &smoothState{} }

// Script returns the Lua twin of SmoothBursty: one hash {stored, next, rate, burst} at KEYS[1].
func (SmoothBursty) Script() *Script { return smoothBurstyScript }

// AppendArgs appends Rate and MaxBurstSeconds (0 sent as 1), formatted with %.17g (a +Inf
// rate as "+Inf", which the script's tonumber reads as infinity).
func (c SmoothBursty) AppendArgs(args []any) []any {
	n := c.config()
	return append(args, formatFloat(n.rate), formatFloat(n.burst))
}

// Quota returns the Limit of its decisions (ceil(maxPermits), 2^53 at a +Inf rate)
// per MaxBurstSeconds (0 is 1): the permits a key saves up while idle for that long.
func (c SmoothBursty) Quota() Quota {
	n := c.config()
	return Quota{Limit: n.params().limit(), Window: spanOf(n.burst)}
}

// Apply answers req as Guava's tryAcquire(N, MaxWait) (acquire(N) for Forever) at now.
func (c SmoothBursty) Apply(st State, now int64, req Request) Decision {
	return applySmooth(st.(*smoothState), c.config(), now, req)
}

// Refund does nothing: Guava cannot give permits back (see SmoothBursty).
func (SmoothBursty) Refund(State, int64, int64, int64) {}

// config returns the normalized config: MaxBurstSeconds 0 is 1.
func (c SmoothBursty) config() smoothConfig {
	burst := c.MaxBurstSeconds
	if burst == 0 {
		burst = 1
	}
	return smoothConfig{rate: c.Rate, burst: burst}
}
