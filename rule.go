package limiter

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/storecheck"
	"github.com/ratekit/limiter/store"
)

// rule is the decider of one rule: a store, an algorithm and how to call the store. Its
// pipeline (run) is one straight sequence: the key function, the guarded store call
// (callOne: breaker, timeout, classification), then settle (failure policy, observation,
// shadow mode). A Limiter made by New is one rule; a rule set (ruleset.go) runs its rules'
// steps.
type rule struct {
	store   store.Store
	alg     atomic.Pointer[algoBox]
	policy  FailurePolicy
	timeout time.Duration
	breaker *breaker // nil with CircuitBreaker{Off: true}
	direct  bool     // no timeout, observer or shadow: Allow goes straight to the store while the breaker is clean
	onError func(key string, err error)
	keyFn   func(key string) string // WithKeyFunc; nil: the key as given
	obs     Observer                // WithObserver; nil: none
	shadow  bool                    // WithShadow
}

// keyFor is the key the limiter limits for key (WithKeyFunc).
func (r *rule) keyFor(key string) string {
	if r.keyFn == nil {
		return key
	}
	return r.keyFn(key)
}

// run is one rule's pipeline, for key after the rule's key function: the guarded
// store call (callOne: breaker, timeout, classification of its error), then settle. Every
// request of one rule off Allow's fast path runs it.
func (r *rule) run(ctx context.Context, key string, a algo.Algorithm, q request, o *outcome) (Decision, error) {
	if o == nil {
		var scratch outcome
		return scratch.folded(r.run(ctx, key, a, q, &scratch))
	}
	if r.shadow {
		q.MaxWait = 0 // see WithShadow: it asks for what is available now
	}
	d, lat, err := r.callOne(ctx, key, a, q, r.timeout)
	return r.settle(ctx, key, a, q, o, d, lat, err)
}

// settle ends one rule's pipeline once its store call answered d or failed with err
// (classified: an *unavailable is a store failure), after lat: the failure policy answers a
// store failure (onFailure), the observer is told (event), and shadow mode turns the answer
// into a grant (shadowAnswer). Allow's fast path joins it here when its store call failed.
func (r *rule) settle(ctx context.Context, key string, a algo.Algorithm, q request, o *outcome, d Decision, lat time.Duration, err error) (Decision, error) {
	if o == nil {
		var scratch outcome
		return scratch.folded(r.settle(ctx, key, a, q, &scratch, d, lat, err))
	}
	o.key = key
	callErr := err
	switch u, failed := err.(*unavailable); {
	case err == nil:
		o.alg = a
	case failed:
		d, err = r.onFailure(ctx, key, q, o, u.err)
	}
	if r.obs != nil {
		r.obs.Decided(ctx, r.event(key, q.N, lat, false, d, callErr, err, o.refused))
	}
	if r.shadow {
		return shadowAnswer(d, err, o, callErr)
	}
	return d, err
}

// callOne sends req for key under a to the rule's store, through the rule's circuit breaker and bounded
// by timeout (0: no bound). When the rule has an observer it also returns the call's latency on
// the monotonic clock: 0 when no call was made (the breaker refused it).
//
// This is the guard of every store call of one rule off Allow's fast path: no closure, no
// defer, no allocation unless a timeout is configured (context.WithTimeout allocates) or
// something fails.
func (r *rule) callOne(ctx context.Context, key string, a algo.Algorithm, req algo.Request, timeout time.Duration) (Decision, time.Duration, error) {
	probe := false
	if b := r.breaker; b != nil {
		var pass bool
		if pass, probe = b.allow(); !pass {
			return Decision{}, 0, refusal(ctx, r, key, storecheck.Apply(key, a, req))
		}
	}
	var (
		d     Decision
		err   error
		start time.Time
		lat   time.Duration
	)
	if r.obs != nil {
		start = time.Now()
	}
	if timeout > 0 {
		tctx, cancel := context.WithTimeout(ctx, timeout)
		d, err = r.store.Apply(tctx, key, a, req)
		cancel()
	} else {
		d, err = r.store.Apply(ctx, key, a, req)
	}
	if r.obs != nil {
		lat = time.Since(start)
	}
	if err != nil {
		err = classify(ctx, err)
		r.record(key, err, probe)
		return Decision{}, lat, err
	}
	if r.breaker != nil {
		r.breaker.success()
	}
	return d, lat, nil
}

// record moves the rule's breaker by the error of a store call it let through (probe: as its
// half-open probe), classified: an *unavailable is reported to the error handler, and
// is a failure of the store when it is an outage, else (one key's failure) an answer of
// the store; any other error (bad input, the caller's done context) tells nothing about
// the store. (A success is the breaker's success, called on the spot.)
func (r *rule) record(key string, err error, probe bool) {
	u, failed := err.(*unavailable)
	if b := r.breaker; b != nil {
		switch {
		case failed && u.outage:
			b.failure(probe)
		case failed:
			b.success()
		default:
			b.release(probe)
		}
	}
	if failed {
		r.report(key, u.err)
	}
}

// report passes a store failure to the error handler, if any.
func (r *rule) report(key string, err error) {
	if r.onError != nil {
		r.onError(key, err)
	}
}

// refundWithin gives n permits of the grant at back to the rule's store, bounded by timeout (0: no
// bound), skipped while the rule's breaker is open. Refunds do not move the breaker; a store
// failure is reported to the error handler and returned.
func (r *rule) refundWithin(ctx context.Context, key string, a algo.Algorithm, n, at int64, timeout time.Duration) error {
	if r.breaker != nil && r.breaker.open() {
		if err := storecheck.Context(ctx); err != nil {
			return err
		}
		r.report(key, errCircuitOpen)
		return errCircuitOpen
	}
	var err error
	if timeout > 0 {
		tctx, cancel := context.WithTimeout(ctx, timeout)
		err = r.store.Refund(tctx, key, a, n, at)
		cancel()
	} else {
		err = r.store.Refund(ctx, key, a, n, at)
	}
	if err == nil {
		return nil
	}
	if u, ok := classify(ctx, err).(*unavailable); ok {
		r.report(key, u.err)
		return u.err
	}
	return err
}

// onFailure answers, by the rule's failure policy, request q for key (after the rule's key function)
// whose store call failed with err, a store failure already reported to the error handler.
// It is the one place where the policies differ:
//
//   - FailClosed fails the request with err and marks o.refused (Reserve answers with a
//     Reservation that is not OK);
//   - FailOpen grants it with an empty Decision that holds nothing, and leaves err in o.soft;
//   - Fallback decides with the fallback limiter, and the error, or o.soft, wraps err.
func (r *rule) onFailure(ctx context.Context, key string, q request, o *outcome, err error) (Decision, error) {
	switch r.policy.kind {
	case failOpen:
		o.soft = err
		return Decision{Allowed: true}, nil
	case failFallback:
		// The fallback decides as if q had been asked of it (its rules, policy and
		// observer): o describes its answer, and the caller sleeps on what it holds.
		fb := r.policy.fallback
		var fo outcome
		d, ferr := fb.decide(ctx, key, q, &fo)
		*o = fo
		if o.by == nil {
			o.by = fb
		}
		if ferr != nil {
			return d, fallbackErr(err, ferr)
		}
		o.soft = fallbackErr(err, fo.soft)
		return d, nil
	default:
		o.refused = true
		return Decision{}, err
	}
}

// noted reports that the rule's decisions are observed or in shadow mode: neither takes the fast
// path of Allow (New clears r.direct), which tells no observer.
func (r *rule) noted() bool { return r.obs != nil || r.shadow }

// event is the one place an Event is built: the rule's decision for key of n permits,
// after a store call of latency lat that answered d (callErr nil) or ended with callErr.
// When callErr is a store failure (*unavailable), (d, err) is the failure policy's answer,
// refused when it refused the request; composite marks a rule's part of a rule set's
// request.
func (r *rule) event(key string, n int64, lat time.Duration, composite bool, d Decision, callErr, err error, refused bool) Event {
	e := Event{Key: key, N: n, Latency: lat, Shadow: r.shadow, Composite: composite}
	switch u, failed := callErr.(*unavailable); {
	case callErr == nil:
		e.Decision, e.Outcome = d, OutcomeAllowed
		if !d.Allowed {
			e.Outcome = OutcomeDenied
		}
	case failed:
		e.Outcome, e.Err = r.policyOutcome(), u.err
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

// peek peeks at key (after the key function) under a in the rule's store, bounded by the rule's
// timeout.
func (r *rule) peek(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (Decision, error) {
	ad, ok := r.store.(store.Admin)
	if !ok {
		return Decision{}, unsupported("Peek", r.store)
	}
	ctx, cancel := withTimeout(ctx, r.timeout)
	defer cancel()
	d, err := ad.Peek(ctx, key, a, req)
	if err == nil && r.shadow {
		// Allow in shadow mode lets a denied request through with the real figures, and a
		// composite counts such a rule as granting: so does Peek.
		var o outcome
		return shadowAnswer(d, nil, &o, nil)
	}
	return d, err
}

// reset resets key (after the key function) under rules in the rule's store, bounded by the rule's
// timeout.
func (r *rule) reset(ctx context.Context, key string, rules ...algo.Algorithm) error {
	ad, ok := r.store.(store.Admin)
	if !ok {
		return unsupported("Reset", r.store)
	}
	ctx, cancel := withTimeout(ctx, r.timeout)
	defer cancel()
	return ad.Reset(ctx, key, rules...)
}
