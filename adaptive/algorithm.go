package adaptive

import (
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
)

// Default bounds of the adaptive algorithms, used when a config leaves them 0.
const (
	defaultInitial = 20
	defaultMin     = 1
	defaultMax     = 1000
)

// sample is what one finished request tells an algorithm.
type sample struct {
	// Start is when the request was admitted, on the limiter's clock.
	Start time.Time
	// Latency is how long it was in flight: from TryAcquire to Token.Done.
	Latency time.Duration
	// InFlight is the number of requests in flight right after it was admitted, itself
	// included. Algorithms use it to tell a limit that is reached from one that is not.
	InFlight int
	// Dropped reports a request that timed out or was refused as overloaded.
	Dropped bool
}

// end returns when the request finished: Start + Latency.
func (s sample) end() time.Time { return s.Start.Add(s.Latency) }

// Algorithm is the configuration of a way to move the limit: AIMD, Gradient or Fixed.
// New validates it; an invalid one is an error wrapping algo.ErrInvalidConfig that names
// the field. The set is closed (the methods are unexported): the algorithms are tested
// as tables of samples inside this package.
type Algorithm interface {
	// validate reports a config that cannot run, wrapping algo.ErrInvalidConfig.
	validate() error
	// newEstimator returns a fresh estimator at the config's initial limit. It is called
	// only with a config that validate accepted.
	newEstimator() estimator
}

// estimator holds the state of one limit. It is a deterministic function of the samples
// it was given: the same samples in the same order give the same limits, whatever the
// time it runs at (time comes from the samples). An estimator is not safe for concurrent
// use; the Limiter calls it under its lock.
type estimator interface {
	// Limit returns the current limit, at least 1.
	Limit() int
	// Update folds one sample in and returns the new limit.
	Update(s sample) int
}

// bounds are the resolved Initial, Min and Max of a config.
type bounds struct{ initial, min, max int }

// resolveBounds applies the defaults to initial, lo and hi and checks them.
func resolveBounds(name string, initial, lo, hi int) (bounds, error) {
	if initial < 0 || lo < 0 || hi < 0 {
		return bounds{}, fmt.Errorf("%w: %s: Initial, Min and Max must be ≥ 0, got %d, %d, %d", algo.ErrInvalidConfig, name, initial, lo, hi)
	}
	b := bounds{initial: initial, min: lo, max: hi}
	if b.min == 0 {
		b.min = defaultMin
	}
	if b.max == 0 {
		b.max = max(defaultMax, b.min)
	}
	if b.min > b.max {
		return bounds{}, fmt.Errorf("%w: %s: Min %d is above Max %d", algo.ErrInvalidConfig, name, b.min, b.max)
	}
	if b.initial == 0 {
		b.initial = min(max(defaultInitial, b.min), b.max)
	}
	if b.initial < b.min || b.initial > b.max {
		return bounds{}, fmt.Errorf("%w: %s: Initial %d is outside [Min %d, Max %d]", algo.ErrInvalidConfig, name, b.initial, b.min, b.max)
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

// validate reports a Limit below 1.
func (f Fixed) validate() error {
	if f.Limit < 1 {
		return fmt.Errorf("%w: Fixed: Limit must be ≥ 1, got %d", algo.ErrInvalidConfig, f.Limit)
	}
	return nil
}

// newEstimator returns an estimator that always answers Limit.
func (f Fixed) newEstimator() estimator { return fixedEstimator(f.Limit) }

// String describes the config.
func (f Fixed) String() string { return fmt.Sprintf("fixed(limit %d)", f.Limit) }

type fixedEstimator int

func (e fixedEstimator) Limit() int        { return int(e) }
func (e fixedEstimator) Update(sample) int { return int(e) }
