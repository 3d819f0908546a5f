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

// WithClock sets the clock the Limiter sleeps on in Wait, WaitN, TryAcquire and
// Reservation.Wait, and reads to time reservations (Reservation.Delay, Reservation.Cancel)
// and the circuit breaker's cool-down, overriding the default: the store's clock when the
// store reports one (store.Clocked; local.WithClock, distributed.WithClientClock), else
// clockx.Real(). It does not decide what "now" is for the algorithm: the store does. A nil
// clock is an error. Set it only when the Limiter must sleep on another time than its
// store decides on.
func WithClock(c clockx.Clock) Option {
	return optionFunc(func(o *options) {
		o.clock, o.nilClock = c, c == nil
	})
}

// WithFailurePolicy sets what a call answers when the store is unavailable (an error
// wrapping store.ErrUnavailable, a per-call timeout, or an open circuit breaker): FailClosed,
// FailOpen or Fallback(l). The default is FailClosed.
func WithFailurePolicy(p FailurePolicy) Option {
	return optionFunc(func(o *options) { o.policy = p })
}

// WithTimeout bounds every store call to d of real time (through the call's context). A
// call that times out counts as the store being unavailable and is answered by the failure
// policy. The default, 0, adds no timeout: the caller's context and the store's own timeouts
// apply. A negative d is an invalid config.
//
// Store calls that must complete after the caller gave up (the refunds of WaitN and
// TryAcquire when ctx ends during the sleep, and a composite's store calls and refunds, see
// All) run detached from the caller's context, bounded by d, or by one second when d is 0.
//
// The timeout is measured in real time, not on the WithClock clock, because it bounds the
// real latency of a store call (a network round trip).
func WithTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) { o.timeout = d })
}

// WithCircuitBreaker sets the circuit breaker, which stops calling a store that is down
// (see CircuitBreaker): WithCircuitBreaker(CircuitBreaker{CoolDown: 5 * time.Second})
// changes the cool-down and keeps the other defaults, WithCircuitBreaker(CircuitBreaker{Off:
// true}) removes the breaker. Every Limiter has one unless Off is set, with the defaults
// of CircuitBreaker's zero value: open when at least half of at least 20 calls within a
// window of 1 s found the store down, probe 1 s later. A negative field, or a FailureRate
// above 1, is an invalid config. Given twice, the last one wins.
//
// A breaker costs nothing while the store is healthy (the call path reads one atomic
// flag), and a store that never fails, such as a local.Store, never moves it.
func WithCircuitBreaker(c CircuitBreaker) Option {
	return optionFunc(func(o *options) { o.breaker = c })
}

// WithErrorHandler sets a function called on every store failure the failure policy
// answers (including calls skipped by an open circuit breaker, whose error wraps
// ErrCircuitOpen), with the key and the error. It is how FailOpen and Fallback failures get
// logged or counted, since Wait and TryAcquire under those policies return no error. It is
// called synchronously on the caller's goroutine and must be safe for concurrent use. The
// default is none; a nil f keeps the default.
func WithErrorHandler(f func(key string, err error)) Option {
	return optionFunc(func(o *options) { o.errorHandler = f })
}

// WithKeyFunc makes the Limiter limit f(key) for every key it is given: Allow, AllowN,
// Reserve, Wait, WaitN and TryAcquire all pass the key through f before anything else, and
// the error handler and a Fallback limiter see f(key). It is how the rules of a composite
// (see All) limit different things for one request: a per-user rule and a per-item rule
// can each pick their part of a key such as "user:42|item:7", and a global rule can map
// every key to one constant. An f that returns "" makes the call fail with
// store.ErrInvalidKey. The default, and a nil f, is the key as given.
func WithKeyFunc(f func(key string) string) Option {
	return optionFunc(func(o *options) { o.keyFn = f })
}
