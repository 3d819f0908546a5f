package limiter

import (
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
)

// Option configures a Limiter. Options are passed to New; New validates them.
type Option interface {
	apply(*options)
}

// options holds what the Options set; New copies it into the Limiter.
type options struct {
	clock        clockx.Clock
	nilClock     bool // WithClock(nil)
	policy       FailurePolicy
	timeout      time.Duration
	breaker      CircuitBreaker // WithCircuitBreaker
	errorHandler func(key string, err error)
	keyFn        func(key string) string
	observer     Observer // WithObserver
	shadow       bool     // WithShadow
}

func defaultOptions() options {
	return options{clock: clockx.Real(), policy: FailClosed}
}

// validate reports, wrapping algo.ErrInvalidConfig, the option that cannot be used.
func (o *options) validate() error {
	if o.nilClock {
		return fmt.Errorf("%w: WithClock: clock is nil", algo.ErrInvalidConfig)
	}
	if o.policy.kind == failFallback && o.policy.fallback == nil {
		return fmt.Errorf("%w: WithFailurePolicy: Fallback limiter is nil", algo.ErrInvalidConfig)
	}
	if o.timeout < 0 {
		return fmt.Errorf("%w: WithTimeout: timeout must be ≥ 0, got %v", algo.ErrInvalidConfig, o.timeout)
	}
	return o.breaker.validate()
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithClock sets the clock the Limiter sleeps on (Wait, WaitN, TryAcquire, Reservation)
// and times reservations and the circuit breaker with. The default is the store's clock
// (store.Clocked), else clockx.Real(); the store alone decides "now" for the algorithm. A
// nil c is an invalid config.
func WithClock(c clockx.Clock) Option {
	return optionFunc(func(o *options) {
		o.clock, o.nilClock = c, c == nil
	})
}

// WithFailurePolicy sets what a call answers when the store is unavailable; the default is
// FailClosed.
func WithFailurePolicy(p FailurePolicy) Option {
	return optionFunc(func(o *options) { o.policy = p })
}

// WithTimeout bounds each store call to d of real time; a call that times out counts as
// the store being unavailable. The default, 0, adds no bound; a negative d is an invalid
// config. Store calls that must finish after the caller gave up (refunds, a composite's
// calls) run detached from the caller's context, bounded by d, or by 1 s when d is 0.
func WithTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) { o.timeout = d })
}

// WithCircuitBreaker sets the circuit breaker (see CircuitBreaker). Every Limiter has one
// with the defaults unless Off is set; it costs one atomic load per call while the store
// is healthy. An invalid field is an invalid config.
func WithCircuitBreaker(c CircuitBreaker) Option {
	return optionFunc(func(o *options) { o.breaker = c })
}

// WithErrorHandler sets f, called synchronously with the key and the error on every store
// failure the failure policy answers (including calls an open breaker skipped): under
// FailOpen and Fallback it is the only trace of a failure in Wait and TryAcquire. f must be
// safe for concurrent use; nil keeps the default, none.
func WithErrorHandler(f func(key string, err error)) Option {
	return optionFunc(func(o *options) { o.errorHandler = f })
}

// WithKeyFunc makes the Limiter limit f(key) for every key it is given, before anything
// else (the error handler, the observer and a Fallback see f(key)): how the rules of a
// composite (All) pick their part of one key. An f returning "" fails the call with
// store.ErrInvalidKey. nil keeps the default, the key as given.
func WithKeyFunc(f func(key string) string) Option {
	return optionFunc(func(o *options) { o.keyFn = f })
}
