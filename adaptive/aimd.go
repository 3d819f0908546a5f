package adaptive

import (
	"fmt"
	"math"
	"time"

	"github.com/ratekit/limiter/algo"
)

// Defaults of AIMD, used when a field is left 0.
const (
	defaultAIMDIncrease = 1.0
	defaultAIMDBackoff  = 0.9
)

// AIMD moves the limit the way TCP moves its congestion window: additive increase,
// multiplicative decrease. Until the first drop it starts slowly, as TCP does: every
// success adds Increase, so the limit doubles per round trip. After it, every success
// adds Increase/limit, so the limit grows by Increase per round trip (one limit's worth
// of successes); a drop multiplies it by Backoff. A drop backs off once: the drops of requests admitted before the last backoff
// (they were already in flight under the old limit) are ignored, and so are their
// successes. While fewer than half the limit are in flight the limit does not grow: the
// traffic, not the server, is what is limiting, and the limit would rise without bound.
//
// AIMD needs a drop signal: requests reported with Timeout or Overload, or slower than
// Timeout. Its limit settles just above the concurrency at which the drops start, so set
// Timeout a little above the latency the service has when it is not queueing. Timeout is
// fixed: should the service itself become slower than it, every request is a drop by
// definition, and the limit falls to Min and stays there until Timeout is raised (Gradient
// needs no threshold and follows such a change).
//
// The zero value is usable: every zero field takes the default written on it.
type AIMD struct {
	// Initial is the limit before any sample; default 20, within [Min, Max].
	Initial int
	// Min and Max bound the limit; defaults 1 and 1000.
	Min, Max int
	// Increase is added to the limit per round trip without a drop; default 1.
	Increase float64
	// Backoff multiplies the limit on a drop, in (0, 1); default 0.9.
	Backoff float64
	// Timeout makes a success slower than it count as a drop; 0 (the default) counts only
	// the outcomes Timeout and Overload.
	Timeout time.Duration
}

// validate reports fields out of range.
func (a AIMD) validate() error {
	_, err := a.resolve()
	return err
}

func (a AIMD) resolve() (aimdConfig, error) {
	b, err := resolveBounds("AIMD", a.Initial, a.Min, a.Max)
	if err != nil {
		return aimdConfig{}, err
	}
	c := aimdConfig{bounds: b, increase: a.Increase, backoff: a.Backoff, timeout: a.Timeout}
	if c.increase == 0 {
		c.increase = defaultAIMDIncrease
	}
	if c.backoff == 0 {
		c.backoff = defaultAIMDBackoff
	}
	switch {
	case !(c.increase > 0) || math.IsInf(c.increase, 0):
		return aimdConfig{}, fmt.Errorf("%w: AIMD: Increase must be a positive number, got %v", algo.ErrInvalidConfig, a.Increase)
	case !(c.backoff > 0 && c.backoff < 1):
		return aimdConfig{}, fmt.Errorf("%w: AIMD: Backoff must be in (0, 1), got %v", algo.ErrInvalidConfig, a.Backoff)
	case c.timeout < 0:
		return aimdConfig{}, fmt.Errorf("%w: AIMD: Timeout must be ≥ 0, got %v", algo.ErrInvalidConfig, a.Timeout)
	}
	return c, nil
}

// newEstimator returns the AIMD state at the initial limit.
func (a AIMD) newEstimator() estimator {
	c, err := a.resolve()
	if err != nil {
		panic(err) // New validated it; a direct caller broke the contract
	}
	return &aimdEstimator{c: c, limit: float64(c.initial)}
}

// String describes the config with its defaults applied.
func (a AIMD) String() string {
	c, err := a.resolve()
	if err != nil {
		return fmt.Sprintf("aimd(invalid: %v)", err)
	}
	s := fmt.Sprintf("aimd(limit %d in [%d, %d], +%g per round trip, ×%g on drop", c.initial, c.min, c.max, c.increase, c.backoff)
	if c.timeout > 0 {
		s += ", timeout " + c.timeout.String()
	}
	return s + ")"
}

type aimdConfig struct {
	bounds
	increase, backoff float64
	timeout           time.Duration
}

type aimdEstimator struct {
	c     aimdConfig
	limit float64
	// since is the end of the last backoff: samples of requests admitted before it
	// describe the limit before it.
	since time.Time
	// dropped ends the slow start: until the first drop every success adds Increase.
	dropped bool
}

func (e *aimdEstimator) Limit() int { return int(e.limit) }

func (e *aimdEstimator) Update(s sample) int {
	if s.Start.Before(e.since) {
		return e.Limit()
	}
	if s.Dropped || (e.c.timeout > 0 && s.Latency > e.c.timeout) {
		e.limit = e.c.clamp(math.Floor(e.limit * e.c.backoff))
		e.since = s.end()
		e.dropped = true
		return e.Limit()
	}
	if float64(2*s.InFlight) >= math.Floor(e.limit) {
		step := e.c.increase / e.limit
		if !e.dropped {
			step = e.c.increase // slow start: the limit doubles per round trip
		}
		e.limit = e.c.clamp(e.limit + step)
	}
	return e.Limit()
}
