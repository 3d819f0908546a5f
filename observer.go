package limiter

import (
	"context"
	"time"
)

// Observer is told about every decision of a Limiter and every change of its circuit
// breaker (WithObserver). Its methods are called synchronously on the caller's goroutine,
// so they must be quick and safe for concurrent use; package otellimit (a module of its
// own) turns them into OpenTelemetry metrics.
type Observer interface {
	// Decided is called once for every decision of the limiter: each call of Allow,
	// AllowN, Reserve and TryAcquire, each try of WaitN (which tries again after a denial
	// it sleeps on), and each request of a composite made by All that reached this rule.
	// ctx is the caller's.
	Decided(ctx context.Context, e Event)

	// BreakerChanged is called when the limiter's circuit breaker moves from one state to
	// another. It is called with the breaker's lock held, so that the calls come in the
	// order of the changes: it must not call the Limiter.
	BreakerChanged(from, to BreakerState)
}

// Event is one decision of a Limiter, as its Observer sees it.
type Event struct {
	// Key is the key decided, after the limiter's key function (WithKeyFunc).
	Key string
	// N is the number of permits asked for.
	N int64
	// Outcome says who answered and how.
	Outcome Outcome
	// Decision is the answer: the store's for OutcomeAllowed and OutcomeDenied, the
	// Fallback limiter's for OutcomeFallback, an allowed Decision with no other field set
	// for OutcomeFailOpen, and the zero Decision otherwise. In shadow mode it is the real
	// answer, not the one the caller gets.
	Decision Decision
	// Err is the error beside the Decision: the store failure that the failure policy
	// answered (OutcomeFailClosed, OutcomeFailOpen, OutcomeFallback; wrapping
	// ErrCircuitOpen when the breaker kept the call from the store), the request's error
	// (OutcomeError), nil otherwise.
	Err error
	// Latency is the real time the store took to answer (or to fail), measured on the
	// monotonic clock around the store call; 0 when no call was made (the circuit breaker
	// was open). Composite rules applied together in one atomic store call
	// (store.MultiApplier) all report that call's latency.
	Latency time.Duration
	// Shadow is true when the limiter is in shadow mode (WithShadow): the caller was
	// allowed whatever Outcome says.
	Shadow bool
	// Composite is true when the decision is one rule's part in a request of a composite
	// made by All; see Observer and docs/observability.md for how to count requests.
	Composite bool
}

// Outcome classifies an Event.
type Outcome uint8

const (
	// OutcomeAllowed: the store granted the request.
	OutcomeAllowed Outcome = iota
	// OutcomeDenied: the store denied the request.
	OutcomeDenied
	// OutcomeError: the request failed with an error that is not the store's
	// unavailability, which no failure policy answers: bad input, the caller's cancelled
	// context, a store's other error.
	OutcomeError
	// OutcomeFailClosed: the store was unavailable and FailClosed refused the request.
	OutcomeFailClosed
	// OutcomeFailOpen: the store was unavailable and FailOpen allowed the request.
	OutcomeFailOpen
	// OutcomeFallback: the store was unavailable and the Fallback limiter answered;
	// Event.Decision.Allowed says how.
	OutcomeFallback
)

// String returns "allowed", "denied", "error", "fail_closed", "fail_open" or "fallback":
// the outcome attribute of package otellimit's metrics.
func (o Outcome) String() string {
	switch o {
	case OutcomeAllowed:
		return "allowed"
	case OutcomeDenied:
		return "denied"
	case OutcomeFailClosed:
		return "fail_closed"
	case OutcomeFailOpen:
		return "fail_open"
	case OutcomeFallback:
		return "fallback"
	default:
		return "error"
	}
}

// BreakerState is the state of a Limiter's circuit breaker (see WithCircuitBreaker).
type BreakerState uint8

const (
	// BreakerClosed: calls go to the store.
	BreakerClosed BreakerState = iota
	// BreakerOpen: calls are answered by the failure policy without touching the store.
	BreakerOpen
	// BreakerHalfOpen: the cool-down has passed and one probe call is on its way to the
	// store; the others are still answered as when open.
	BreakerHalfOpen
)

// String returns "closed", "open" or "half_open".
func (s BreakerState) String() string {
	switch s {
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half_open"
	default:
		return "closed"
	}
}

// WithObserver sets an Observer told about every decision of the Limiter (allowed,
// denied, failed, or answered by the failure policy, with the store's latency) and every
// change of its circuit breaker. Peek and Reset are not decisions and are not observed.
// The default is none, which costs nothing: no clock is read and no event is built. A nil
// o keeps the default.
//
// A composite made by All is observed through its rules: each rule's Observer sees that
// rule's part of each request (Event.Composite), including a grant that is given back
// because a later rule denied. docs/observability.md explains what to count.
func WithObserver(o Observer) Option {
	return optionFunc(func(opts *options) { opts.observer = o })
}

// noted reports that l's decisions are observed or in shadow mode: neither takes the fast
// path of Allow (New clears l.direct), which tells no observer.
func (l *Limiter) noted() bool { return l.obs != nil || l.shadow }

// event is the one place an Event is built: rule l's decision for key of n permits,
// after a store call of latency lat that answered d (callErr nil) or ended with callErr.
// When callErr is a store failure (*unavailable), (d, err) is the failure policy's answer,
// refused when it refused the request; composite marks a rule's part of a rule set's
// request.
func (l *Limiter) event(key string, n int64, lat time.Duration, composite bool, d Decision, callErr, err error, refused bool) Event {
	e := Event{Key: key, N: n, Latency: lat, Shadow: l.shadow, Composite: composite}
	switch u, failed := callErr.(*unavailable); {
	case callErr == nil:
		e.Decision, e.Outcome = d, OutcomeAllowed
		if !d.Allowed {
			e.Outcome = OutcomeDenied
		}
	case failed:
		e.Outcome, e.Err = l.policyOutcome(), u.err
		if err != nil {
			e.Err = err
		}
		if !refused {
			e.Decision = d
		}
	default:
		e.Outcome, e.Err = OutcomeError, callErr
	}
	return e
}

// policyOutcome is the Outcome of a request that l's failure policy answered.
func (l *Limiter) policyOutcome() Outcome {
	switch l.policy.kind {
	case failOpen:
		return OutcomeFailOpen
	case failFallback:
		return OutcomeFallback
	default:
		return OutcomeFailClosed
	}
}
