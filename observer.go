package limiter

import (
	"context"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
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

// noted reports that l's decisions go through decideNoted: it has an observer or is in
// shadow mode. Neither takes the direct path of Allow (New clears l.direct).
func (l *Limiter) noted() bool { return l.obs != nil || l.shadow }

// decideNoted is decideOne for a limiter with an observer or in shadow mode: it times the
// store call when there is an observer, tells the observer, and in shadow mode turns the
// answer into a grant (shadow.go). key is after the rule's key function.
//
//go:noinline
func (l *Limiter) decideNoted(ctx context.Context, key string, a algo.Algorithm, q request, o *outcome) (Decision, error) {
	if l.shadow {
		q = shadowRequest(q, true)
	}
	o.key = key
	var start time.Time
	if l.obs != nil {
		start = time.Now()
	}
	d, err := l.callOne(ctx, key, a, q.Request, l.timeout)
	e := Event{Key: key, N: q.N, Shadow: l.shadow}
	if l.obs != nil {
		e.Latency = latency(start, err)
	}
	switch u, failed := err.(*unavailable); {
	case err == nil:
		o.alg = a
		e = decidedEvent(e, d)
	case failed:
		d, err = l.onFailure(ctx, key, q, o, u.err)
		e.Outcome, e.Decision, e.Err = l.policyOutcome(), d, u.err
		if err != nil {
			e.Err = err
		}
		if o.refused {
			e.Decision = Decision{}
		}
	default:
		e.Outcome, e.Err = OutcomeError, err
	}
	if l.obs != nil {
		l.obs.Decided(ctx, e)
	}
	if l.shadow {
		return shadowAnswer(d, err, o, e.Outcome)
	}
	return d, err
}

// latency is the time since start of a store call that ended with err: 0 when the
// circuit breaker kept it from the store.
func latency(start time.Time, err error) time.Duration {
	if err == error(circuitOpen) {
		return 0
	}
	return time.Since(start)
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

// notedStep is one step of a rule set's group (tally.group) for rule r, the i-th of g,
// when r has an observer or is in shadow mode: decideNoted's work for a rule of a
// composite. It reports whether r counts as granting, or an error that fails the whole
// request.
func (t *tally) notedStep(ctx context.Context, r *Limiter, g group, i int, q request) (bool, error) {
	if r.shadow {
		q = shadowRequest(q, false)
	}
	var start time.Time
	if r.obs != nil {
		start = time.Now()
	}
	d, err := r.callOne(ctx, g.key, g.algs[i], q.Request, t.within(r.timeout))
	e := Event{Key: g.key, N: q.N, Shadow: r.shadow, Composite: true}
	if r.obs != nil {
		e.Latency = latency(start, err)
	}
	if u, failed := err.(*unavailable); failed {
		before := len(t.answers)
		ok, ferr := t.onFailure(r, g.key, q, u.err)
		r.tell(t.caller, t.failureEvent(r, g.key, q.N, e.Latency, before, u.err, ferr))
		if r.shadow && (ferr != nil || !ok) {
			return t.shadowFailure(ferr), nil
		}
		return ok, ferr
	}
	if err != nil {
		e.Outcome, e.Err = OutcomeError, err
		r.tell(t.caller, e)
		return false, err
	}
	r.tell(t.caller, decidedEvent(e, d))
	t.answers = append(t.answers, answer{d: d, figures: true, rule: r})
	if !d.Allowed {
		// In shadow mode a denial lets the request through and takes nothing; its figures
		// stay in the composite's Decision.
		return r.shadow, nil
	}
	t.held = append(t.held, grant{lim: r, key: g.key, alg: g.algs[i], n: q.N, at: d.At})
	return true, nil
}

// notedAtomic is tally.atomic for a group one of whose rules has an observer (and none is
// in shadow mode): it times the group's one store call and tells each rule's observer of
// its part, after its failure policy when the store was unavailable.
func (t *tally) notedAtomic(ctx context.Context, ma store.MultiApplier, g group, q request) (bool, error) {
	start := time.Now()
	ds, ok, err := callGroup(ctx, ma, g, q.Request, t.detached)
	lat := latency(start, err)
	if u, failed := err.(*unavailable); failed {
		for _, r := range g.rules {
			before := len(t.answers)
			ok, ferr := t.onFailure(r, g.key, q, u.err)
			r.tell(t.caller, t.failureEvent(r, g.key, q.N, lat, before, u.err, ferr))
			if ferr != nil || !ok {
				return false, ferr
			}
		}
		return true, nil
	}
	for i, r := range g.rules {
		e := Event{Key: g.key, N: q.N, Latency: lat, Composite: true, Outcome: OutcomeError, Err: err}
		if err == nil {
			e = decidedEvent(e, ds[i])
		}
		r.tell(t.caller, e)
	}
	if err != nil {
		return false, err
	}
	t.keep(g, q, ds, ok)
	return ok, nil
}

// decidedEvent is e for the store's Decision d.
func decidedEvent(e Event, d Decision) Event {
	e.Decision, e.Outcome, e.Err = d, OutcomeAllowed, nil
	if !d.Allowed {
		e.Outcome = OutcomeDenied
	}
	return e
}

// failureEvent is the Event of rule r, whose store call failed with err (after lat), once
// its failure policy answered by tally.onFailure with ferr; before is the number of
// answers before it.
func (t *tally) failureEvent(r *Limiter, key string, n int64, lat time.Duration, before int, err, ferr error) Event {
	e := Event{Key: key, N: n, Latency: lat, Shadow: r.shadow, Composite: true, Outcome: r.policyOutcome(), Err: err}
	if ferr != nil {
		e.Err = ferr
	}
	if len(t.answers) > before {
		e.Decision = t.answers[len(t.answers)-1].d
	}
	return e
}

// groupNoted reports whether a rule of g has an observer (observed) or is in shadow mode
// (shadow).
func groupNoted(g group) (observed, shadow bool) {
	for _, r := range g.rules {
		observed = observed || r.obs != nil
		shadow = shadow || r.shadow
	}
	return observed, shadow
}

// tell passes e to l's observer, if any.
func (l *Limiter) tell(ctx context.Context, e Event) {
	if l.obs != nil {
		l.obs.Decided(ctx, e)
	}
}
