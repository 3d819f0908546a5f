package limiter

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/ctxutil"
	"github.com/ratekit/limiter/internal/storecheck"
	"github.com/ratekit/limiter/store"
)

// Every request of a Limiter (Allow, Reserve, WaitN, TryAcquire) goes one way, whatever
// its rules:
//
//  1. plan: the rules grouped by store and key (a Limiter made by New is one group of
//     one rule; All's groups are built by plan, composite.go);
//  2. call: one store call per group (Apply for one rule, store.MultiApplier.ApplyAll for
//     several), guarded: every rule's breaker lets it through, one deadline bounds it
//     (bounded), and its error is classified (classify: an outage, one key's failure, or
//     the caller's error);
//  3. settle: each rule's answer, in one order: the failure policy answers a store
//     failure (policy.go), the observer is told (observer.go), shadow mode lets a denial
//     through;
//  4. combine: the Decision of the set, and when a rule denied or the request failed,
//     what the other rules granted is given back.
//
// runOne takes the four steps for a set of one rule without allocating; runAll takes
// them for any set. Both call the same call and settle.

// rule is one rule of a Limiter: a store, an algorithm, and how to call the store. New
// makes one; All combines the rules of the Limiters it is given.
type rule struct {
	lim     *Limiter // the Limiter New made for this rule (Rules, TraceRules)
	store   store.Store
	alg     atomic.Pointer[algoBox]
	clock   clockx.Clock
	policy  FailurePolicy
	timeout time.Duration
	breaker *breaker // nil with CircuitBreaker{Off: true} and no Logger
	onError func(key string, err error)
	keyFn   func(key string) string // WithKeyFunc; nil: the key as given
	obs     Observer                // WithObserver; nil: none
	shadow  bool                    // WithShadow
}

// algoBox lets an atomic.Pointer hold an interface value.
type algoBox struct {
	a algo.Algorithm
}

// keyFor is the key the rule limits for key (WithKeyFunc).
func (r *rule) keyFor(key string) string {
	if r.keyFn == nil {
		return key
	}
	return r.keyFn(key)
}

// result is what a request found beside its Decision: the one result of the pipeline,
// which Reserve, WaitN and TryAcquire turn into a Reservation.
type result struct {
	d       Decision // the answer: written once where it is made, not copied up each call
	key     string   // the key decided: one rule's after its key function, a set's as given
	keep    bool     // record the grants in held (a Reservation may give them back)
	set     bool     // the request is a composite's: each rule's part is observed as such
	held    []grant  // what the granting rules hold
	soft    error    // store failures that FailOpen or Fallback answered: the request stands
	refused bool     // a failure policy refused the request (FailClosed, a failing Fallback)
	by      *Limiter // the Fallback that answered one rule's request (its clock times it)
}

// addSoft joins err to the request's soft errors.
func (res *result) addSoft(err error) {
	switch {
	case err == nil || same(err, res.soft): // the rules of an atomic group share their call's failure
	case res.soft == nil:
		res.soft = err
	default:
		res.soft = errors.Join(res.soft, err)
	}
}

// answerer is the Limiter whose clock times what res holds: l, or the Fallback that
// answered l's one rule.
func (res *result) answerer(l *Limiter) *Limiter {
	if res.by != nil && !res.set {
		return res.by
	}
	return l
}

// release gives back what a set's request holds: the request failed, or a rule denied.
func (res *result) release(ctx context.Context) {
	giveBack(ctx, res.held, true)
	res.held = nil
}

// fail gives back what a set's request holds, and fails it with err.
func (res *result) fail(ctx context.Context, err error) error {
	res.release(ctx)
	res.d = Decision{}
	return err
}

// answer is one rule's answer to a request.
type answer struct {
	rule    *rule
	d       Decision // the store's, or the failure policy's
	figures bool     // d has Limit and Remaining (FailOpen's answer has none)
	traced  bool     // the store answered d: TraceRules reports it
}

// grant is one rule's share of a grant: what it takes to give it back.
type grant struct {
	rule *rule
	key  string // after the rule's key function
	alg  algo.Algorithm
	n    int64
	at   int64
}

// run answers q for key under every rule of l: the Decision in res.d (with an error,
// what the request returns beside it). The Decision is a 56-byte struct: passed up by
// value it was stored and copied again at each call, and these copies were a third of
// Allow's time.
func (l *Limiter) run(ctx context.Context, key string, q algo.Request, res *result) error {
	switch {
	case q.N <= 0:
		return invalidN(q.N)
	case l.unmade():
		return errUnmade
	case q.Charge && len(l.rules) > 1:
		// Every rule must take the charge before any is charged: a composite's rule
		// refusing it after another took it would have it given back.
		for _, r := range l.rules {
			if err := storecheck.Request(r.alg.Load().a, q); err != nil {
				return err
			}
		}
		return l.runAll(ctx, key, q, res)
	case len(l.rules) == 1:
		return l.rules[0].runOne(ctx, key, q, res)
	default:
		return l.runAll(ctx, key, q, res)
	}
}

// runOne is the pipeline of a set of one rule: one group of one, so its plan is the key
// function and its combine the rule's own answer.
func (r *rule) runOne(ctx context.Context, key string, q algo.Request, res *result) error {
	key = r.keyFor(key)
	res.key = key
	a := r.alg.Load().a
	if r.shadow {
		q.MaxWait = 0 // see WithShadow: it asks for what is available now
	}
	lat, err := r.call(ctx, key, a, q, r.timeout, &res.d)
	if err == nil && r.obs == nil && !r.shadow && !res.keep {
		// settle and combine have nothing to do with the store's answer: no failure, no
		// observer, no shadow mode, nothing to hold. (Allow's usual call: their struct
		// copies of the Decision cost it a quarter of its time.)
		return nil
	}
	ans, ok, err := r.settle(ctx, key, a, q, res.d, lat, err, res.d.Allowed, res)
	if err != nil {
		res.d = ans.d
		return err
	}
	res.d = combine([]answer{ans}, ok)
	return nil
}

// runAll is the pipeline of any set of rules, all or nothing (see All).
//
// A caller that gives up (ctx ends) must not leave permits taken that it never gets. A
// store call abandoned in flight may still change the state (a Redis script runs once
// sent) without telling which grant to give back, so the store calls run detached from
// ctx, each bounded (detachedWithin); ctx is checked before each group and at the end,
// and when it has ended everything granted is given back.
func (l *Limiter) runAll(ctx context.Context, key string, q algo.Request, res *result) error {
	res.key, res.keep, res.set = key, true, true
	sctx, detached := ctx, ctx.Done() != nil
	if detached {
		sctx = context.WithoutCancel(ctx)
	}
	as := make([]answer, 0, len(l.rules))
	allowed := true
	for _, g := range l.plan(key) {
		if err := ctx.Err(); err != nil {
			return res.fail(ctx, err)
		}
		ok, err := g.decide(ctx, sctx, q, detached, res, &as)
		if err != nil {
			return res.fail(ctx, err)
		}
		if !ok {
			allowed = false
			break
		}
	}
	if !allowed {
		res.release(ctx)
	} else if err := ctx.Err(); err != nil {
		return res.fail(ctx, err)
	}
	traceRules(ctx, as)
	res.d = combine(as, allowed)
	return nil
}

// decide applies q to the rules of g and appends their answers to as: in one
// store.MultiApplier call when g is atomic, else rule by rule, stopping at the first
// denial. It reports whether every rule granted, or an error that fails the request.
// Store calls use sctx; the failure policies and observers get the caller's ctx.
func (g *group) decide(ctx, sctx context.Context, q algo.Request, detached bool, res *result, as *[]answer) (bool, error) {
	if ma, ok := g.atomic(); ok {
		ds, granted, lat, err := g.callAll(sctx, ma, q, detached)
		_, failed := err.(*unavailable)
		for i, r := range g.rules {
			var d Decision
			if err == nil {
				d = ds[i]
			}
			ans, ok, rerr := r.settle(ctx, g.key, g.algs[i], q, d, lat, err, granted, res)
			if rerr == nil {
				*as = append(*as, ans)
			}
			if failed && (rerr != nil || !ok) {
				return false, rerr
			}
		}
		switch {
		case failed: // every rule's failure policy granted
			return true, nil
		case err != nil:
			return false, err
		}
		return granted, nil
	}
	for i, r := range g.rules {
		rq := q
		if r.shadow {
			rq.MaxWait = 0 // see WithShadow
		}
		timeout := r.timeout
		if detached {
			timeout = detachedWithin(timeout)
		}
		var d Decision
		lat, err := r.call(sctx, g.key, g.algs[i], rq, timeout, &d)
		ans, ok, err := r.settle(ctx, g.key, g.algs[i], rq, d, lat, err, d.Allowed, res)
		if err != nil {
			return false, err
		}
		*as = append(*as, ans)
		if !ok {
			return false, nil
		}
	}
	return true, nil
}

// call sends req for key under a to the rule's store, through the rule's breaker and
// bounded by timeout (0: no bound), and classifies its error; the store's Decision goes
// to *d (the zero Decision on an error). When the rule has an observer it also returns the
// call's latency on the monotonic clock: 0 when the breaker kept the call from the store.
func (r *rule) call(ctx context.Context, key string, a algo.Algorithm, req algo.Request, timeout time.Duration, d *Decision) (time.Duration, error) {
	probe := false
	if b := r.breaker; b != nil && !b.clean() { // clean: allow would say pass, no probe
		var pass bool
		if pass, probe = b.allow(); !pass {
			*d = Decision{}
			return 0, refusal(ctx, r, key, storecheck.Apply(key, a, req))
		}
	}
	var start time.Time
	if r.obs != nil {
		start = time.Now()
	}
	var err error
	if timeout > 0 {
		cctx, cancel := bounded(ctx, timeout)
		*d, err = r.store.Apply(cctx, key, a, req)
		cancel()
	} else {
		*d, err = r.store.Apply(ctx, key, a, req)
	}
	var lat time.Duration
	if r.obs != nil {
		lat = time.Since(start)
	}
	if err != nil {
		*d = Decision{}
		err = classify(ctx, err)
		r.record(key, err, probe)
		return lat, err
	}
	if b := r.breaker; b != nil && !b.clean() { // clean: success would record nothing
		b.success()
	}
	return lat, nil
}

// callAll is call for the rules of an atomic group, in one store.MultiApplier call: every
// rule's breaker must let it through, the shortest of their timeouts bounds it, and its
// outcome counts for every breaker.
func (g *group) callAll(ctx context.Context, ma store.MultiApplier, req algo.Request, detached bool) ([]Decision, bool, time.Duration, error) {
	probes := make([]bool, len(g.rules))
	var timeout time.Duration
	timed := false
	for i, r := range g.rules {
		if r.breaker != nil {
			var pass bool
			if pass, probes[i] = r.breaker.allow(); !pass {
				for j, q := range g.rules[:i] {
					if q.breaker != nil {
						q.breaker.release(probes[j])
					}
				}
				return nil, false, 0, refusal(ctx, r, g.key, storecheck.ApplyAll(g.key, g.algs, req))
			}
		}
		if r.timeout > 0 && (timeout == 0 || r.timeout < timeout) {
			timeout = r.timeout
		}
		timed = timed || r.obs != nil
	}
	if detached {
		timeout = detachedWithin(timeout)
	}
	var start time.Time
	if timed {
		start = time.Now()
	}
	cctx, cancel := bounded(ctx, timeout)
	ds, ok, err := ma.ApplyAll(cctx, g.key, g.algs, req)
	cancel()
	var lat time.Duration
	if timed {
		lat = time.Since(start)
	}
	if err != nil {
		err = classify(ctx, err)
		for i, r := range g.rules {
			r.record(g.key, err, probes[i])
		}
		return nil, false, lat, err
	}
	for _, r := range g.rules {
		if r.breaker != nil {
			r.breaker.success()
		}
	}
	return ds, ok, lat, nil
}

// settle ends rule r's part of request q on key once its store call answered d or failed
// with err (classified), after lat; granted says whether r now holds d's permits (in an
// atomic group, only when the whole group granted). In this order: the failure policy
// answers a store failure (onFailure), the observer is told (event), and shadow mode lets
// a denial or a refused failure through, holding nothing. It returns r's answer and
// whether r counts as granting, or an error that fails the request.
func (r *rule) settle(ctx context.Context, key string, a algo.Algorithm, q algo.Request, d Decision, lat time.Duration, err error, granted bool, res *result) (answer, bool, error) {
	ans := answer{rule: r, d: d, figures: true, traced: err == nil}
	ok, ferr := granted, err
	u, failed := err.(*unavailable)
	switch {
	case err == nil:
		if granted && res.keep {
			res.held = append(res.held, grant{rule: r, key: key, alg: a, n: q.N, at: d.At})
		}
	case failed:
		ans.d, ans.figures, ok, ferr = r.onFailure(ctx, key, q, u.err, res)
	default:
		ok = false
	}
	if r.obs != nil {
		r.obs.Decided(ctx, r.event(key, q, lat, res.set, ans.d, err, ferr))
	}
	if r.shadow {
		switch {
		case failed && (ferr != nil || !ok):
			// Answered as FailOpen answers: through, holding nothing, the failure kept.
			res.refused = false
			res.addSoft(ferr)
			if ferr != nil {
				ans = answer{rule: r, d: Decision{Allowed: true}}
			}
			return ans, true, nil
		case err == nil && !d.Allowed:
			return ans, true, nil // a denial takes nothing; its figures stay in the answer
		}
	}
	return ans, ok, ferr
}

// record moves the rule's breaker by the error of a store call it let through (probe: as
// its half-open probe), classified: an *unavailable is reported to the error handler, and
// is a failure of the store when it is an outage, else (one key's failure) an answer of
// the store; any other error (bad input, the caller's done context) tells nothing about
// the store.
func (r *rule) record(key string, err error, probe bool) {
	u, failed := err.(*unavailable)
	if b := r.breaker; b != nil {
		switch {
		case failed && u.outage:
			b.failure(probe, u.err)
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

// refusal is the error of a call r's open breaker kept from the store: bad input stays an
// input error (inputErr, the store's own check), and a done context the caller's. Otherwise
// the skipped call is reported and is circuitOpen.
func refusal(ctx context.Context, r *rule, key string, inputErr error) error {
	if inputErr != nil {
		return inputErr
	}
	if err := storecheck.Context(ctx); err != nil {
		return err
	}
	r.report(key, errCircuitOpen)
	return circuitOpen
}

// combine is the Decision of a set from its rules' answers, allowed or not (see All). The
// answer of a set of one is the rule's own Decision, a shadow rule's denial let through.
func combine(as []answer, allowed bool) Decision {
	if len(as) == 1 {
		d := as[0].d
		if allowed && !d.Allowed {
			d.Allowed, d.Wait = true, 0
		}
		return d
	}
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
			out.RetryAfter = max(out.RetryAfter, d.RetryAfter) // a charge's: until one permit
			first = false
			continue
		}
		if d.Allowed || a.rule.shadow {
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

// giveBack refunds every grant of gs, reporting failures to each rule's error handler, and
// returns them joined. It reaches the stores even when ctx is done; each refund is bounded
// by its rule's timeout, or when detached (the caller gave up, or a composite rolls back)
// by detachedWithin on a context that ctx's end does not cancel.
func giveBack(ctx context.Context, gs []grant, detached bool) error {
	if len(gs) == 0 {
		return nil
	}
	if detached {
		ctx = context.WithoutCancel(ctx)
	} else {
		ctx = ctxutil.Cleanup(ctx)
	}
	var errs []error
	for _, g := range gs {
		timeout := g.rule.timeout
		if detached {
			timeout = detachedWithin(timeout)
		}
		if err := g.rule.refund(ctx, g, timeout); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// refund gives g back to the rule's store, bounded by timeout (0: no bound), skipped while
// the rule's breaker is open. Refunds do not move the breaker; a store failure is reported
// to the error handler and returned.
func (r *rule) refund(ctx context.Context, g grant, timeout time.Duration) error {
	if r.breaker != nil && r.breaker.open() {
		r.report(g.key, errCircuitOpen)
		return errCircuitOpen
	}
	cctx, cancel := bounded(ctx, timeout)
	err := r.store.Refund(cctx, g.key, g.alg, g.n, g.at)
	cancel()
	if err == nil {
		return nil
	}
	if u, ok := classify(ctx, err).(*unavailable); ok {
		r.report(g.key, u.err)
		return u.err
	}
	return err
}

// detachedTimeout bounds a store call that runs detached from its caller's context (a
// refund after the caller gave up, a rule of a composite) when the limiter has no
// WithTimeout: long enough for any store that answers at all, short enough that a hung one
// does not hold the caller for good.
const detachedTimeout = time.Second

// detachedWithin is the bound of a detached store call of a rule with timeout.
func detachedWithin(timeout time.Duration) time.Duration {
	if timeout > 0 {
		return timeout
	}
	return detachedTimeout
}

// bounded is the one place a store call's deadline is set: ctx bounded by timeout, when
// positive. It allocates nothing when there is no bound.
func bounded(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout > 0 {
		return context.WithTimeout(ctx, timeout)
	}
	return ctx, noCancel
}

func noCancel() {}
