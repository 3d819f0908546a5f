package adaptive

import (
	"errors"
	"fmt"
	"time"
)

// ErrInvalidConfig reports an algorithm or option that cannot run; New wraps it with the
// offending field.
var ErrInvalidConfig = errors.New("adaptive: invalid config")

// Default bounds of the adaptive algorithms, used when a config leaves them 0.
const (
	DefaultInitial = 20
	DefaultMin     = 1
	DefaultMax     = 1000
)

// Sample is what one finished request tells an algorithm.
type Sample struct {
	// Start is when the request was admitted, on the limiter's clock.
	Start time.Time
	// Latency is how long it was in flight: from Acquire to Token.Done.
	Latency time.Duration
	// InFlight is the number of requests in flight right after it was admitted, itself
	// included. Algorithms use it to tell a limit that is reached from one that is not.
	InFlight int
	// Dropped reports a request that timed out or was refused as overloaded.
	Dropped bool
}

// End returns when the request finished: Start + Latency.
func (s Sample) End() time.Time { return s.Start.Add(s.Latency) }

// Algorithm is the configuration of a way to move the limit. AIMD, Gradient and Fixed
// implement it; New validates it and asks it for an Estimator.
type Algorithm interface {
	// Validate reports a config that cannot run, wrapping ErrInvalidConfig.
	Validate() error
	// NewEstimator returns a fresh estimator at the config's initial limit. It is called
	// only with a config that Validate accepted.
	NewEstimator() Estimator
}

// Estimator holds the state of one limit. It is a deterministic function of the samples
// it was given: the same samples in the same order give the same limits, whatever the
// time it runs at (time comes from the samples). An Estimator is not safe for concurrent
// use; the Limiter calls it under its lock.
type Estimator interface {
	// Limit returns the current limit, at least 1.
	Limit() int
	// Update folds one sample in and returns the new limit.
	Update(s Sample) int
}

// bounds are the resolved Initial, Min and Max of a config.
type bounds struct{ initial, min, max int }

// resolveBounds applies the defaults to initial, lo and hi and checks them.
func resolveBounds(name string, initial, lo, hi int) (bounds, error) {
	if initial < 0 || lo < 0 || hi < 0 {
		return bounds{}, fmt.Errorf("%w: %s: Initial, Min and Max must be ≥ 0, got %d, %d, %d", ErrInvalidConfig, name, initial, lo, hi)
	}
	b := bounds{initial: initial, min: lo, max: hi}
	if b.min == 0 {
		b.min = DefaultMin
	}
	if b.max == 0 {
		b.max = max(DefaultMax, b.min)
	}
	if b.min > b.max {
		return bounds{}, fmt.Errorf("%w: %s: Min %d is above Max %d", ErrInvalidConfig, name, b.min, b.max)
	}
	if b.initial == 0 {
		b.initial = min(max(DefaultInitial, b.min), b.max)
	}
	if b.initial < b.min || b.initial > b.max {
		return bounds{}, fmt.Errorf("%w: %s: Initial %d is outside [Min %d, Max %d]", ErrInvalidConfig, name, b.initial, b.min, b.max)
	}
	return b, nil
}

// clamp keeps x within [b.min, b.max].
func (b bounds) clamp(x float64) float64 {
	return min(max(x, float64(b.min)), float64(b.max))
}

// Fixed is a limit that never moves: a plain semaphore with the Limiter's API, for
// comparisons and for services whose capacity is known. Limit must be ≥ 1.
type Fixed struct {
	Limit int
}

// Validate reports a Limit below 1.
func (f Fixed) Validate() error {
	if f.Limit < 1 {
		return fmt.Errorf("%w: Fixed: Limit must be ≥ 1, got %d", ErrInvalidConfig, f.Limit)
	}
	return nil
}

// NewEstimator returns an estimator that always answers Limit.
func (f Fixed) NewEstimator() Estimator { return fixedEstimator(f.Limit) }

// String describes the config.
func (f Fixed) String() string { return fmt.Sprintf("fixed(limit %d)", f.Limit) }

type fixedEstimator int

func (e fixedEstimator) Limit() int        { return int(e) }
func (e fixedEstimator) Update(Sample) int { return int(e) }
