package algo

import (
	_ "embed" // the Lua twin
	"fmt"
	"math"
)

// SmoothBursty is Guava's RateLimiter.create(Rate) (SmoothRateLimiter.SmoothBursty): permits
// are handed out one every 1/Rate seconds, and the time a key stays unused is saved up as
// stored permits, at most MaxBurstSeconds × Rate of them, which later requests take at no
// cost (a burst). A request waits for the one before it, never for itself, so a large
// request makes the next caller wait. The waits are Guava's to the microsecond.
//
// A new key starts with no stored permits. Request.MaxWait is Guava's tryAcquire timeout:
// 0 is tryAcquire(N), d > 0 is tryAcquire(N, d), Forever is acquire(N). A request with
// another config on the same key first applies it as Guava's setRate does. Rate may be +Inf
// (every permit free). Waits saturate at MaxMicros and are then denied with RetryAfter ==
// Never; N above 2^53 is never granted; Refund does nothing. A Charge ([Request].Charge)
// is Guava's acquire(N) without the charging caller's wait: it spends the stored permits,
// and the cost of the rest (N minus them, 1/Rate s each) is the wait of the next request.
//
// The state, the formulas, Limit and Remaining, expiry and the differences from Guava are in
// docs/algorithms.md ("Smooth: Guava's RateLimiter").
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
	_ quoter   = SmoothBursty{}
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

// Script returns the Lua twin of SmoothBursty: one packed string "B" stored next rate burst
// at KEYS[1].
func (SmoothBursty) Script() *Script { return smoothBurstyScript }

// AppendArgs appends Rate and MaxBurstSeconds (0 sent as 1), formatted with %.17g (a +Inf
// rate as "+Inf", which the script's tonumber reads as infinity).
func (c SmoothBursty) AppendArgs(args []any) []any {
	n := c.config()
	return append(args, formatFloat(n.rate), formatFloat(n.burst))
}

// quota returns the Limit of its decisions (ceil(maxPermits), 2^53 at a +Inf rate)
// per MaxBurstSeconds (0 is 1): the permits a key saves up while idle for that long.
func (c SmoothBursty) quota() Quota {
	n := c.config()
	return Quota{Limit: n.params().limit(), Window: spanOf(n.burst)}
}

// Apply answers req as Guava's tryAcquire(N, MaxWait) (acquire(N) for Forever) at now;
// a Charge is acquire(N) with no wait for the charging caller: the next caller pays.
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

// Samples (see Samples): Guava's default of one second saved, a fractional rate saving
// 2.5 s, an interval that is not whole µs, and an unlimited rate.
var _ = sample(
	SmoothBursty{Rate: 5},
	SmoothBursty{Rate: 1.0 / 3, MaxBurstSeconds: 2.5},
	SmoothBursty{Rate: 1e6 / 7},
	SmoothBursty{Rate: math.Inf(1)},
)
