package limiter

import (
	"context"
	"time"

	"github.com/ratekit/limiter/algo"
)

// Allow, Reserve, WaitN and TryAcquire are written once, over decide: one rule asks its
// store (the fast path of Allow lives here), a rule set made by All asks every rule, all or
// nothing (ruleset.go). A store failure is answered by the failure policy (onFailure)
// before decide returns, so the methods above see a Decision, what it holds, and errors.

// call names the method a request comes from: a Fallback takes the same call over.
type call uint8

const (
	callAllow   call = iota
	callReserve      // also each rule of a rule set
	callWait
	callTry
)

// request is one request of Allow, Reserve, WaitN or TryAcquire on its way to decide.
type request struct {
	algo.Request
	call    call
	timeout time.Duration // TryAcquire's timeout, for a Fallback that takes it over
}

// outcome is what decide found beside its Decision.
type outcome struct {
	key   string         // the key decided: after the key function of one rule, as given for a rule set
	alg   algo.Algorithm // one rule whose store answered: the algorithm applied; nil otherwise
	parts []grant        // a rule set that granted: what each rule holds, to give back
	soft  error          // a store failure that FailOpen or Fallback answered: the request stands

	// The failure policy's marks: refused by FailClosed (or, in a rule set, by a rule's
	// failing Fallback); final when a Fallback took the whole call over, and then its
	// Decision and error are the call's answer (res: its Reservation, for Reserve).
	refused bool
	final   bool
	res     *Reservation
}

// holds reports whether an allowed outcome holds permits that a Reservation can give back:
// none when FailOpen answered.
func (o *outcome) holds() bool { return o.alg != nil || len(o.parts) > 0 }

// decide answers q for key: an error is the request's failure (its Decision is then
// denied, or the Fallback's), with o.refused set when the failure policy refused it.
func (l *Limiter) decide(ctx context.Context, key string, q request, o *outcome) (Decision, error) {
	b := l.alg.Load()
	if b == nil {
		// Only a rule set and a Limiter not made by New have no algorithm: this one nil
		// comparison keeps both off the path of one rule.
		if l.set != nil {
			return l.set.decide(ctx, key, q, o)
		}
		return Decision{}, errUnmade
	}
	key = l.keyFor(key)
	o.key = key
	a := b.a
	var (
		d   Decision
		err error
	)
	if l.direct && (l.breaker == nil || l.breaker.clean()) {
		// Straight to the store: Allow is the hottest call of all, and the call frame this
		// saves (with the Decision it copies) measured about 5 % of it. A clean breaker
		// (closed, no failure counted) has nothing to record on success; a failure goes
		// through settle, which counts it.
		if d, err = l.store.Apply(ctx, key, a, q.Request); err != nil {
			single := [1]*Limiter{l}
			err = settle(ctx, single[:], []bool{false}, key, err)
		}
	} else {
		d, err = l.callOne(ctx, key, a, q.Request, l.timeout)
	}
	if err == nil {
		o.alg = a
		return d, nil
	}
	if u, ok := err.(*unavailable); ok {
		return l.onFailure(ctx, key, q, o, u.err)
	}
	return Decision{}, err
}

// reservation records a granted or denied outcome as a Reservation timed on l's clock (a
// rule set's: its first rule's).
func (l *Limiter) reservation(n int64, d Decision, o *outcome) *Reservation {
	r := &Reservation{clock: l.clock, key: o.key, alg: o.alg, n: n, d: d, readyAt: l.clock.Now()}
	if d.Allowed {
		r.readyAt = r.readyAt.Add(d.Wait)
		if o.holds() {
			r.lim, r.parts = l, o.parts
		}
	}
	return r
}
