package limiter

import (
	"context"
	"time"

	"github.com/ratekit/limiter/algo"
)

// Observer is told of every decision of a Limiter and every change of its circuit breaker
// (WithObserver), synchronously on the caller's goroutine: its methods must be quick and
// safe for concurrent use. Module otellimit turns them into OpenTelemetry metrics.
type Observer interface {
	// Decided is called once per decision: each Allow, AllowN, Reserve and TryAcquire,
	// each try of WaitN, and each rule's part of a composite's request. ctx is the caller's.
	Decided(ctx context.Context, e Event)

	// BreakerChanged is called on each change of the breaker's state, in order, under the
	// breaker's lock: it must not call the Limiter.
	BreakerChanged(from, to BreakerState)
}

// Event is one decision of a Limiter, as its Observer sees it.
type Event struct {
	Key     string  // after the key function (WithKeyFunc)
	N       int64   // permits asked for
	Outcome Outcome // who answered, and how
	// Decision is the answer: the store's, the Fallback's (OutcomeFallback), an allowed
	// Decision with no figures (OutcomeFailOpen), else zero. In shadow mode, the real one.
	Decision Decision
	// Err is the store failure the policy answered (wrapping ErrCircuitOpen when the
	// breaker skipped the store), the request's error (OutcomeError), else nil.
	Err error
	// Latency is the store call's real time on the monotonic clock; 0 when no call was
	// made (the open breaker kept it from the store). The rules of one atomic group share
	// their call's.
	Latency   time.Duration
	Shadow    bool // the Limiter is in shadow mode: the caller was let through
	Composite bool // one rule's part of a composite's request (docs/observability.md)
	Charge    bool // a Limiter.Charge: its store's answer is OutcomeCharged
}

// Outcome classifies an Event.
type Outcome uint8

const (
	OutcomeAllowed    Outcome = iota // the store granted
	OutcomeDenied                    // the store denied
	OutcomeError                     // an error no policy answers: bad input, a done context
	OutcomeFailClosed                // store unavailable: FailClosed refused
	OutcomeFailOpen                  // store unavailable: FailOpen allowed
	OutcomeFallback                  // store unavailable: the Fallback answered (see Decision)
	OutcomeCharged                   // the store recorded a Charge (see Event.Charge)
)

// String returns "allowed", "denied", "error", "fail_closed", "fail_open", "fallback" or
// "charged": the outcome attribute of package otellimit's metrics.
func (o Outcome) String() string {
	switch o {
	case OutcomeCharged:
		return "charged"
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
	BreakerClosed   BreakerState = iota // calls go to the store
	BreakerOpen                         // the failure policy answers, the store untouched
	BreakerHalfOpen                     // one probe is on its way; the others as when open
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

// WithObserver sets an Observer told of every decision and every change of the circuit
// breaker; Peek and Reset are not decisions. The default, and a nil o, is none, which
// costs nothing. A composite is observed through its rules' observers.
func WithObserver(o Observer) Option {
	return optionFunc(func(opts *options) { opts.observer = o })
}

// event is the one place an Event is built: rule r's decision for key of request q, after a
// store call of latency lat that answered d (callErr nil) or ended with callErr. When
// callErr is a store failure (*unavailable), (d, err) is the failure policy's answer;
// composite marks a rule's part of a composite's request.
func (r *rule) event(key string, q algo.Request, lat time.Duration, composite bool, d Decision, callErr, err error) Event {
	e := Event{Key: key, N: q.N, Latency: lat, Shadow: r.shadow, Composite: composite, Charge: q.Charge}
	switch u, failed := callErr.(*unavailable); {
	case callErr == nil:
		e.Decision, e.Outcome = d, OutcomeAllowed
		switch {
		case q.Charge && d.Allowed:
			e.Outcome = OutcomeCharged
		case !d.Allowed:
			e.Outcome = OutcomeDenied
		}
	case failed:
		e.Outcome, e.Err, e.Decision = r.policyOutcome(), u.err, d
		if err != nil {
			e.Err = err
		}
	default:
		e.Outcome, e.Err = OutcomeError, callErr
	}
	return e
}

// policyOutcome is the Outcome of a request that the rule's failure policy answered.
func (r *rule) policyOutcome() Outcome {
	switch r.policy.kind {
	case failOpen:
		return OutcomeFailOpen
	case failFallback:
		return OutcomeFallback
	default:
		return OutcomeFailClosed
	}
}
