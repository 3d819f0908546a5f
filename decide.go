package limiter

import (
	"context"
	"time"

	"github.com/ratekit/limiter/algo"
)

// Allow, Reserve, WaitN and TryAcquire are written once, over decide: one rule runs its
// pipeline (decideOne; Allow's fast path is allow's, below), a rule set made by All runs
// every rule's, all or nothing (ruleset.go). A store failure is answered by the failure
// policy (onFailure) before decide returns, so the methods above see a Decision, what it
// holds, and errors.

// request is one request of Allow, Reserve, WaitN or TryAcquire on its way to decide.
type request = algo.Request

// outcome is what decide found beside its Decision.
type outcome struct {
	key   string         // the key decided: after the key function of one rule, as given for a rule set
	alg   algo.Algorithm // one rule whose store granted: the algorithm applied; nil otherwise
	parts []grant        // a rule set that granted: what each rule holds, to give back
	soft  error          // a store failure that FailOpen or Fallback answered: the request stands
	by    *Limiter       // the Fallback limiter that answered (then key, alg and parts are its); nil: the limiter asked

	refused bool // refused by FailClosed (or, in a rule set, by a rule's failing Fallback)
}

// holds reports whether an allowed outcome holds permits that a Reservation can give back:
// none when FailOpen answered.
func (o *outcome) holds() bool { return o.alg != nil || len(o.parts) > 0 }

// holder is the limiter that answered, and holds what o holds: l, or its Fallback.
func (o *outcome) holder(l *Limiter) *Limiter {
	if o.by != nil {
		return o.by
	}
	return l
}

// grants is what o holds after l (a rule of a rule set) granted d for n permits.
func (o *outcome) grants(l *Limiter, n int64, d Decision) []grant {
	switch {
	case !d.Allowed || !o.holds():
		return nil
	case o.parts != nil:
		return o.parts
	default:
		return []grant{{lim: o.holder(l), key: o.key, alg: o.alg, n: n, at: d.At}}
	}
}

// decide answers q for key: an error is the request's failure (its Decision is then
// denied, or the Fallback's), with o.refused set when the failure policy refused it.
// Allow passes no outcome (o nil): a store failure that FailOpen or Fallback answered then
// comes back as the error beside the Decision, as AllowN returns it.
//
// One rule's healthy Allow never gets here: allow takes it straight to the store.
func (l *Limiter) decide(ctx context.Context, key string, q request, o *outcome) (Decision, error) {
	// AllowN leaves its checks to decide, so that it is small enough to be inlined.
	if q.N <= 0 {
		return Decision{}, invalidN(q.N)
	}
	if l == nil {
		return Decision{}, errUnmade
	}
	b := l.alg.Load()
	if b == nil {
		// Only a rule set and a Limiter not made by New have no algorithm: this one nil
		// comparison keeps both off the path of one rule.
		if l.set != nil {
			return l.set.decide(ctx, key, q, o)
		}
		return Decision{}, errUnmade
	}
	return l.decideOne(ctx, l.keyFor(key), b.a, q, o)
}

// allow is AllowN writing its Decision to *d: Allow and AllowN, inlined into their caller,
// then hand it over without copying a Decision just returned in registers (such a copy
// stalls on the stores it reads: ~6 ns a call boundary), and a local store writes it in
// place too (local.Store.ApplyTo, a concrete call, so d does not escape). It is the one
// fast path: the store straight away when there is no timeout, no observer or shadow
// (direct) and the breaker is clean (closed, no failure counted: a success has nothing to
// record). Every other case goes through decide.
func (l *Limiter) allow(ctx context.Context, key string, n int64, d *Decision) error {
	if n > 0 && l != nil && l.direct && (l.breaker == nil || l.breaker.clean()) {
		if b := l.alg.Load(); b != nil {
			key = l.keyFor(key)
			var err error
			*d, err = l.store.Apply(ctx, key, b.a, algo.Request{N: n})
			if err != nil {
				err = classify(ctx, err)
				l.record(key, err, false)
				*d, err = l.settle(ctx, key, b.a, request{N: n}, nil, Decision{}, 0, err)
			}
			return err
		}
	}
	var err error
	*d, err = l.decide(ctx, key, request{N: n}, nil)
	return err
}

// decideOne is one rule's pipeline, for key after the rule's key function: the guarded
// store call (callOne: breaker, timeout, classification of its error), then settle. Every
// request of one rule off Allow's fast path runs it.
func (l *Limiter) decideOne(ctx context.Context, key string, a algo.Algorithm, q request, o *outcome) (Decision, error) {
	if o == nil {
		var scratch outcome
		return scratch.folded(l.decideOne(ctx, key, a, q, &scratch))
	}
	if l.shadow {
		q.MaxWait = 0 // see WithShadow: it asks for what is available now
	}
	d, lat, err := l.callOne(ctx, key, a, q, l.timeout)
	return l.settle(ctx, key, a, q, o, d, lat, err)
}

// settle ends one rule's pipeline once its store call answered d or failed with err
// (classified: an *unavailable is a store failure), after lat: the failure policy answers a
// store failure (onFailure), the observer is told (event), and shadow mode turns the answer
// into a grant (shadowAnswer). Allow's fast path joins it here when its store call failed.
func (l *Limiter) settle(ctx context.Context, key string, a algo.Algorithm, q request, o *outcome, d Decision, lat time.Duration, err error) (Decision, error) {
	if o == nil {
		var scratch outcome
		return scratch.folded(l.settle(ctx, key, a, q, &scratch, d, lat, err))
	}
	o.key = key
	callErr := err
	switch u, failed := err.(*unavailable); {
	case err == nil:
		o.alg = a
	case failed:
		d, err = l.onFailure(ctx, key, q, o, u.err)
	}
	if l.obs != nil {
		l.obs.Decided(ctx, l.event(key, q.N, lat, false, d, callErr, err, o.refused))
	}
	if l.shadow {
		return shadowAnswer(d, err, o, callErr)
	}
	return d, err
}

// folded returns d with o's soft error as its error, if any (a request that stands has no
// other): the answer of Allow, which passes no outcome to decide.
func (o *outcome) folded(d Decision, err error) (Decision, error) {
	if o.soft != nil {
		return d, o.soft
	}
	return d, err
}

// reservation records a granted or denied outcome of l as a Reservation timed on the clock
// of the limiter that answered (a rule set's: its first rule's).
func (l *Limiter) reservation(n int64, d Decision, o *outcome) *Reservation {
	h := o.holder(l)
	r := &Reservation{clock: h.clock, key: o.key, alg: o.alg, n: n, d: d, readyAt: h.clock.Now()}
	if d.Allowed {
		r.readyAt = r.readyAt.Add(d.Wait)
		if o.holds() {
			r.lim, r.parts = h, o.parts
		}
	}
	return r
}
