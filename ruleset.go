package limiter

import (
	"context"
	"errors"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
)

// decide answers q for key under every rule, all or nothing (see All). Each rule applies
// its own key function; o.key is key as given.
//
// A caller that gives up (ctx ends) must not leave permits taken that it never gets. A
// store call abandoned in flight may still change the state (a Redis script runs once
// sent) without telling which grant to refund, so the rules' store calls run detached from
// ctx, each bounded by its rule's timeout or detachedTimeout; ctx is checked before each
// group and at the end, and when it has ended everything granted is refunded.
func (c *ruleSet) decide(ctx context.Context, key string, q request, o *outcome) (Decision, error) {
	// Each rule's failure policy answers for it within the same bound: a Fallback
	// reserves, and the rule set sleeps for all of them.
	t := tally{answers: make([]answer, 0, len(c.rules)), held: make([]grant, 0, len(c.rules)), caller: ctx}
	sctx := ctx
	if ctx.Done() != nil {
		t.detached, sctx = true, context.WithoutCancel(ctx)
	}
	for _, g := range c.groups(key) {
		if err := ctx.Err(); err != nil {
			_ = refundGrants(ctx, t.held)
			return t.failed(o, key, err)
		}
		ok, err := t.group(sctx, g, q)
		if err != nil {
			// Failures of the refunds reach each rule's error handler. refundGrants
			// detaches from ctx: the rollback reaches the stores even when ctx has ended.
			_ = refundGrants(ctx, t.held)
			return t.failed(o, key, err)
		}
		if !ok {
			_ = refundGrants(ctx, t.held)
			traceRules(ctx, t.answers)
			return t.answer(o, key, false)
		}
	}
	if err := ctx.Err(); err != nil {
		_ = refundGrants(ctx, t.held)
		return t.failed(o, key, err)
	}
	traceRules(ctx, t.answers)
	return t.answer(o, key, true)
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

// group is the rules of a rule set that share a store and a key (after their key
// functions): one atomic step when the store is a store.MultiApplier.
type group struct {
	sid   int
	store store.Store
	key   string
	rules []*Limiter
	algs  []algo.Algorithm // each rule's algorithm (in its namespace: ruleAlgs), read once for this request
}

// groups splits the rules by store and key, in the order of their first rule. The groups
// share two backing arrays, so a request allocates three times whatever the rules.
func (c *ruleSet) groups(key string) []group {
	n := len(c.rules)
	var buf [16]int
	ints := buf[:]
	if 2*n > len(buf) {
		ints = make([]int, 2*n)
	}
	gid, count := ints[:n], ints[n:2*n] // each rule's group; each group's size
	gs := make([]group, 0, n)
next:
	for i, r := range c.rules {
		k := r.keyFor(key)
		for j := range gs {
			if gs[j].sid == c.storeID[i] && gs[j].key == k {
				gid[i] = j
				count[j]++
				continue next
			}
		}
		gid[i], count[len(gs)] = len(gs), 1
		gs = append(gs, group{sid: c.storeID[i], store: r.store, key: k})
	}
	rules, algs := make([]*Limiter, n), make([]algo.Algorithm, n)
	off := 0
	for j := range gs {
		gs[j].rules, gs[j].algs = rules[off:off:off+count[j]], algs[off:off:off+count[j]]
		off += count[j]
	}
	var abuf [8]algo.Algorithm
	for i, a := range c.ruleAlgs(abuf[:]) {
		g := &gs[gid[i]]
		g.rules, g.algs = append(g.rules, c.rules[i]), append(g.algs, a)
	}
	return gs
}

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

// atomic returns g's store when its rules are decided in one store.MultiApplier call, where
// every rule answers even after one denied: two rules or more, on such a store, none in
// shadow mode (a shadow rule's denial must not stop the others). Allow and Peek ask it.
func (g group) atomic() (store.MultiApplier, bool) {
	ma, ok := g.store.(store.MultiApplier)
	if !ok || len(g.rules) < 2 || g.has(func(r *Limiter) bool { return r.shadow }) {
		return nil, false
	}
	return ma, true
}

// has reports whether a rule of g has property p.
func (g group) has(p func(*Limiter) bool) bool {
	for _, r := range g.rules {
		if p(r) {
			return true
		}
	}
	return false
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
		if d.Allowed {
			continue
		}
		if first || d.Remaining < out.Remaining {
			out.Limit, out.Remaining = d.Limit, d.Remaining
		}
		out.RetryAfter = max(out.RetryAfter, d.RetryAfter) // algo.Never is the largest
		first = false
	}
	return out
}
