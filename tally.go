package limiter

import (
	"context"
	"errors"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
)

// tally collects the rules' answers to one request of a rule set.
type tally struct {
	answers  []answer
	held     []grant
	soft     []error
	refused  bool            // a rule's failure policy failed the request
	caller   context.Context // the caller's context, for a Fallback limiter
	detached bool            // store calls run detached from caller: bound each one
}

// answer is one rule's answer to a request of a rule set.
type answer struct {
	d       Decision
	figures bool     // false for a FailOpen answer, which has no Limit or Remaining
	rule    *Limiter // the rule whose store gave d; nil when its failure policy answered
}

// failed is the rule set's answer to a request that failed with err.
func (t *tally) failed(o *outcome, key string, err error) (Decision, error) {
	if o != nil {
		o.key, o.refused = key, t.refused
	}
	return Decision{}, err
}

// answer is the rule set's answer to a request that every rule granted (allowed) or one
// denied; with no outcome (Allow), the store failures FailOpen or Fallback answered are its
// error.
func (t *tally) answer(o *outcome, key string, allowed bool) (Decision, error) {
	soft := errors.Join(t.soft...)
	if o == nil {
		return combine(t.answers, allowed), soft
	}
	o.key, o.soft = key, soft
	if allowed {
		o.parts = t.held
	}
	return combine(t.answers, allowed), nil
}

// within is the bound of a store call of a rule with timeout.
func (t *tally) within(timeout time.Duration) time.Duration {
	if t.detached {
		return detachedWithin(timeout)
	}
	return timeout
}

func (t *tally) addSoft(err error) {
	if err != nil && (len(t.soft) == 0 || t.soft[len(t.soft)-1] != err) {
		t.soft = append(t.soft, err)
	}
}

// group applies q to the rules of g: in one store.MultiApplier call when its store can
// and no rule of g is in shadow mode (a shadow rule's denial must not stop the others),
// else rule by rule, stopping at the first denial. It reports whether every rule granted,
// or an error that fails the whole request.
func (t *tally) group(ctx context.Context, g group, q request) (bool, error) {
	if ma, ok := g.atomic(); ok {
		return t.atomic(ctx, ma, g, q)
	}
	for i, r := range g.rules {
		rq := q
		if r.shadow {
			rq.MaxWait = 0 // see WithShadow: it asks for what is available now
		}
		d, lat, err := r.callOne(ctx, g.key, g.algs[i], rq, t.within(r.timeout))
		if ok, err := t.settle(r, g.key, g.algs[i], rq, d, lat, err, d.Allowed); err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// atomic applies the rules of g in one store.MultiApplier call, and settles each rule's
// part: a store failure is answered by each rule's own policy, up to the first that
// refuses; any other error fails the request once every rule's observer was told.
func (t *tally) atomic(ctx context.Context, ma store.MultiApplier, g group, q request) (bool, error) {
	ds, ok, lat, err := callGroup(ctx, ma, g, q, t.detached, g.has(func(r *Limiter) bool { return r.obs != nil }))
	_, failed := err.(*unavailable)
	for i, r := range g.rules {
		var d Decision
		if err == nil {
			d = ds[i]
		}
		granted, rerr := t.settle(r, g.key, g.algs[i], q, d, lat, err, ok)
		if failed && (rerr != nil || !granted) {
			return false, rerr
		}
	}
	switch {
	case failed:
		return true, nil
	case err != nil:
		return false, err
	}
	return ok, nil
}

// settle ends rule r's part of the request, as settle ends one rule's request, once its
// store call answered d or failed with err (classified), after lat: the failure policy
// answers a store failure (onFailure), the observer is told (event), and in shadow mode
// the rule counts as granting. granted says whether r now holds d's permits (in an atomic
// group, only when the whole group granted). It reports whether r counts as granting, or
// an error that fails the whole request.
func (t *tally) settle(r *Limiter, key string, a algo.Algorithm, q request, d Decision, lat time.Duration, err error, granted bool) (bool, error) {
	u, failed := err.(*unavailable)
	ok, ferr := false, err
	switch {
	case failed:
		before := len(t.answers)
		ok, ferr = t.onFailure(r, key, q, u.err)
		d = Decision{}
		if len(t.answers) > before {
			d = t.answers[len(t.answers)-1].d
		}
	case err == nil:
		t.answers = append(t.answers, answer{d: d, figures: true, rule: r})
		if granted {
			t.held = append(t.held, grant{lim: r, key: key, alg: a, n: q.N, at: d.At})
		}
		ok = granted
	}
	if r.obs != nil {
		r.obs.Decided(t.caller, r.event(key, q.N, lat, true, d, err, ferr, false))
	}
	if r.shadow {
		switch {
		case failed && (ferr != nil || !ok):
			return t.shadowFailure(ferr), nil
		case err == nil && !d.Allowed:
			// A denial lets the request through and takes nothing; its figures stay in
			// the composite's Decision.
			return true, nil
		}
	}
	return ok, ferr
}

// shadowFailure answers a store failure of a rule in shadow mode that its failure policy
// refused (ferr) or that its Fallback denied: the rule counts as granting, holding
// nothing.
func (t *tally) shadowFailure(ferr error) bool {
	t.refused = false
	if ferr != nil {
		t.answers = append(t.answers, answer{d: Decision{Allowed: true}})
		t.addSoft(ferr)
	}
	return true
}

// onFailure takes rule r's failure policy's answer to q, for r's store failure err. It
// reports whether r counts as granting, or an error that fails the whole request.
func (t *tally) onFailure(r *Limiter, key string, q request, err error) (bool, error) {
	// A Fallback is asked on the caller's context: it may be a rule set, which detaches
	// its own store calls.
	var o outcome
	d, err := r.onFailure(t.caller, key, q, &o, err)
	switch {
	case err != nil: // FailClosed, or a Fallback that failed as well
		t.refused = true
		return false, err
	case o.by != nil: // a Fallback answered, holding what it granted
		t.answers = append(t.answers, answer{d: d, figures: d.Limit > 0 || !d.Allowed})
		t.held = append(t.held, o.grants(r, q.N, d)...)
		t.addSoft(o.soft)
		return d.Allowed, nil
	default: // FailOpen: granted, without figures
		t.answers = append(t.answers, answer{d: d})
		t.addSoft(o.soft)
		return true, nil
	}
}

// grant is one rule's share of a rule set's grant: what it takes to refund it.
type grant struct {
	lim *Limiter // the limiter whose store holds it
	key string   // after the limiter's key function
	alg algo.Algorithm
	n   int64
	at  int64
}

// refundGrants gives every grant back, reporting failures to each limiter's error handler;
// it returns them joined. The refunds must land even when the caller's context is done, so
// they run detached from it, each bounded by its limiter's timeout (detachedWithin).
func refundGrants(ctx context.Context, gs []grant) error {
	ctx = context.WithoutCancel(ctx)
	var errs []error
	for _, g := range gs {
		if err := g.lim.refundWithin(ctx, g.key, g.alg, g.n, g.at, detachedWithin(g.lim.timeout)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// combine builds the rule set's Decision from the rules' answers (see All).
func combine(as []answer, allowed bool) Decision {
	var out Decision
	out.Allowed = allowed
	first := true
	for _, a := range as {
		if !a.figures {
			continue
		}
		d := a.d
		out.ResetAfter = max(out.ResetAfter, d.ResetAfter)
		if allowed {
			if first || d.Remaining < out.Remaining {
				out.Limit, out.Remaining = d.Limit, d.Remaining
			}
			if first || d.Wait > out.Wait {
				out.Wait, out.At = d.Wait, d.At
			}
			first = false
			continue
		}
		if d.Allowed || a.rule != nil && a.rule.shadow {
			continue // a rule in shadow mode counts as granting: its denial binds nothing
		}
		if first || d.Remaining < out.Remaining {
			out.Limit, out.Remaining = d.Limit, d.Remaining
		}
		out.RetryAfter = max(out.RetryAfter, d.RetryAfter) // algo.Never is the largest
		first = false
	}
	return out
}
