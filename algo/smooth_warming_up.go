package algo

import (
	_ "embed" // the Lua twin
	"fmt"
	"time"
)

// SmoothWarmingUp is Guava's RateLimiter.create(Rate, Warmup) with a cold factor
// (SmoothRateLimiter.SmoothWarmingUp): a key that has been unused starts slow ("cold") and
// speeds up to Rate as it is used, over Warmup of saturated use. The waits are Guava's to
// the microsecond.
//
// It shares SmoothBursty's model (a request paying for the one before it, Request.MaxWait as
// Guava's tryAcquire timeout, config changes as Guava's setRate), but stored permits are not
// free: the interval between permits rises from 1/Rate to ColdFactor/Rate as they pile up. A
// new key starts cold, and a key idle for Warmup is cold again, so a forgotten key behaves
// exactly like the one it replaces. Waits saturate at MaxMicros (reported as Never); N above
// 2^53 is never granted; Refund does nothing. A Charge ([Request].Charge) is Guava's
// acquire(N) without the charging caller's wait: the stored permits it spends (at their
// warm-up cost) and the fresh ones (1/Rate s each) are the wait of the next request.
//
// The formulas, the diagram and the differences from Guava are in docs/algorithms.md
// ("SmoothWarmingUp").
type SmoothWarmingUp struct {
	Rate       float64       // permits per second at full speed; +Inf, or in [1e-15, 1e15]
	Warmup     time.Duration // time of saturated use from cold to full speed; in [0, MaxMicros µs], truncated to µs
	ColdFactor float64       // coldInterval / stableInterval; 0 means 3, else in [1, 1e6]
}

// smoothWarmingUpLua is the Lua twin, run after prelude.lua and smooth.lua (see Script).
//
//go:embed smooth_warming_up.lua
var smoothWarmingUpLua string

// The script is built once: Script returns the same pointer on every call, so a store can
// key its cache of loaded SHA1s by it.
var smoothWarmingUpScript = newScript(SmoothWarmingUp{}.Name(), smoothLua+"\n"+smoothWarmingUpLua)

// Compile-time checks: SmoothWarmingUp has a Lua twin and a Quota.
var (
	_ Scripted = SmoothWarmingUp{}
	_ quoter   = SmoothWarmingUp{}
)

// Name returns "smooth-warmup".
func (SmoothWarmingUp) Name() string { return "smooth-warmup" }

// Slot returns "smw": a rate change keeps the key's state and is applied like Guava's setRate.
func (SmoothWarmingUp) Slot() string { return "smw" }

// Validate reports a Rate that is NaN, not positive, or finite outside [1e-15, 1e15], a
// Warmup outside [0, MaxMicros µs], and a ColdFactor that is not 0 and not in [1, 1e6].
func (c SmoothWarmingUp) Validate() error {
	if err := checkSmoothRate("SmoothWarmingUp.Rate", c.Rate); err != nil {
		return err
	}
	if c.Warmup < 0 || c.Warmup > maxSpan {
		return fmt.Errorf("%w: SmoothWarmingUp.Warmup must be in [0, %v] (MaxMicros µs), got %v",
			ErrInvalidConfig, maxSpan, c.Warmup)
	}
	if f := c.ColdFactor; f != 0 && !(f >= 1 && f <= smoothMaxColdFactor) {
		return fmt.Errorf("%w: SmoothWarmingUp.ColdFactor must be in [1, %g] (0 means 3), got %v",
			ErrInvalidConfig, float64(smoothMaxColdFactor), f)
	}
	return nil
}

// String describes the config.
func (c SmoothWarmingUp) String() string {
	n := c.config()
	return fmt.Sprintf("smooth-warmup(rate=%g/s, warmup=%v, cold-factor=%g)",
		c.Rate, time.Duration(n.warmup)*time.Microsecond, n.cold)
}

// NewState returns the state of a key never seen: cold, created at its first request.
func (SmoothWarmingUp) NewState() State { return &smoothState{} }

// Script returns the Lua twin of SmoothWarmingUp: one packed string "W" stored next rate
// warmup cold at KEYS[1].
func (SmoothWarmingUp) Script() *Script { return smoothWarmingUpScript }

// AppendArgs appends Rate (%.17g, +Inf as "+Inf"), Warmup in whole µs and ColdFactor (0
// sent as 3, %.17g).
func (c SmoothWarmingUp) AppendArgs(args []any) []any {
	n := c.config()
	return append(args, formatFloat(n.rate), n.warmup, formatFloat(n.cold))
}

// quota returns the Limit of its decisions (ceil(maxPermits), 2^53 at a +Inf rate)
// with no Window: the rate at which a key earns permits depends on how warm it is.
func (c SmoothWarmingUp) quota() Quota {
	return Quota{Limit: c.config().params().limit()}
}

// Apply answers req as Guava's tryAcquire(N, MaxWait) (acquire(N) for Forever) at now;
// a Charge is acquire(N) with no wait for the charging caller: the next caller pays.
func (c SmoothWarmingUp) Apply(st State, now int64, req Request) Decision {
	return applySmooth(st.(*smoothState), c.config(), now, req)
}

// Refund does nothing: Guava cannot give permits back.
func (SmoothWarmingUp) Refund(State, int64, int64, int64) {}

// config returns the normalized config: ColdFactor 0 is 3, Warmup in whole µs.
func (c SmoothWarmingUp) config() smoothConfig {
	cold := c.ColdFactor
	if cold == 0 {
		cold = 3
	}
	return smoothConfig{warm: true, rate: c.Rate, warmup: int64(max(c.Warmup, 0) / time.Microsecond), cold: cold}
}

// Samples (see Samples): warm-ups of a millisecond to seconds, the default cold factor
// and a steeper one.
var _ = sample(
	SmoothWarmingUp{Rate: 2, Warmup: 4 * time.Second},
	SmoothWarmingUp{Rate: 10, Warmup: 250 * time.Millisecond, ColdFactor: 10},
	SmoothWarmingUp{Rate: 1e6 / 7, Warmup: time.Millisecond},
)
