package limiter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/storecheck"
	"github.com/ratekit/limiter/store"
)

// outcome is the answer to one composite request.
type outcome struct {
	d      Decision
	grants []grant // what an allowed request holds, to refund on Cancel
	soft   error   // store failures a FailOpen or Fallback policy answered
	hard   error   // the request failed: d is empty and nothing is held
}

// group is the rules of a composite that share a store and a key (after their key
// functions): one atomic step when the store is a store.MultiApplier.
type group struct {
	sid   int
	store store.Store
	key   string
	rules []*Limiter
	algs  []algo.Algorithm // each rule's algorithm, read once for this request
}

// groups splits the rules by store and key, in the order of their first rule. The groups
// share two backing arrays, so a request allocates three times whatever the rules.
func (c *composite) groups(key string) []group {
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
	for i, r := range c.rules {
		g := &gs[gid[i]]
		g.rules, g.algs = append(g.rules, r), append(g.algs, r.alg.Load().a)
	}
	return gs
}

// decide answers req for key under every rule, all or nothing (see All).
//
// A caller that gives up (ctx ends) must not leave permits taken that it never gets. A
// store call abandoned in flight may still change the state (a Redis script runs once
// sent) without telling which grant to refund, so the rules' store calls run detached from
// ctx, each bounded by its rule's timeout or detachedTimeout; ctx is checked before each
// group and at the end, and when it has ended everything granted is refunded.
func (c *composite) decide(ctx context.Context, key string, req algo.Request) outcome {
	t := tally{answers: make([]answer, 0, len(c.rules)), held: make([]grant, 0, len(c.rules)), caller: ctx}
	sctx := ctx
	if ctx.Done() != nil {
		t.detached, sctx = true, context.WithoutCancel(ctx)
	}
	for _, g := range c.groups(key) {
		if err := ctx.Err(); err != nil {
			_ = refundGrants(ctx, t.held)
			return outcome{hard: err}
		}
		ok, err := t.group(sctx, g, req)
		if err != nil {
			// Failures of the refunds reach each rule's error handler. refundGrants
			// detaches from ctx: the rollback reaches the stores even when ctx has ended.
			_ = refundGrants(ctx, t.held)
			return outcome{hard: err}
		}
		if !ok {
			_ = refundGrants(ctx, t.held)
			return outcome{d: combine(t.answers, false), soft: errors.Join(t.soft...)}
		}
	}
	if err := ctx.Err(); err != nil {
		_ = refundGrants(ctx, t.held)
		return outcome{hard: err}
	}
	return outcome{d: combine(t.answers, true), grants: t.held, soft: errors.Join(t.soft...)}
}

// tally collects the rules' answers to one composite request.
type tally struct {
	answers  []answer
	held     []grant
	soft     []error
	caller   context.Context // the caller's context, for a Fallback limiter
	detached bool            // store calls run detached from caller: bound each one
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

// group applies req to the rules of g: atomically when its store can, else one rule after
// the other, stopping at the first denial. It reports whether every rule granted, or an
// error that fails the whole request.
func (t *tally) group(ctx context.Context, g group, req algo.Request) (bool, error) {
	if len(g.rules) > 1 {
		if err := storecheck.DistinctSlots(g.algs); err != nil {
			return false, fmt.Errorf("limiter: All: on key %q: %w", g.key, err)
		}
		if ma, ok := g.store.(store.MultiApplier); ok {
			return t.atomic(ctx, ma, g, req)
		}
	}
	for i, r := range g.rules {
		d, failed, err := r.callWithin(ctx, g.key, g.algs[i], req, t.within(r.timeout))
		if failed {
			if ok, err := t.onFailure(ctx, r, g.key, req, err); err != nil || !ok {
				return false, err
			}
			continue
		}
		if err != nil {
			return false, err
		}
		t.answers = append(t.answers, answer{d: d, figures: true})
		if !d.Allowed {
			return false, nil
		}
		t.held = append(t.held, grant{lim: r, key: g.key, alg: g.algs[i], n: req.N, at: d.At})
	}
	return true, nil
}

// atomic applies the rules of g in one store.MultiApplier call.
func (t *tally) atomic(ctx context.Context, ma store.MultiApplier, g group, req algo.Request) (bool, error) {
	ds, ok, failed, err := callGroup(ctx, ma, g, req, t.detached)
	if failed {
		// Each rule's own policy answers for it.
		for _, r := range g.rules {
			if ok, err := t.onFailure(ctx, r, g.key, req, err); err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	}
	if err != nil {
		return false, err
	}
	for i, d := range ds {
		t.answers = append(t.answers, answer{d: d, figures: true})
		if ok {
			t.held = append(t.held, grant{lim: g.rules[i], key: g.key, alg: g.algs[i], n: req.N, at: d.At})
		}
	}
	return ok, nil
}

// onFailure answers for rule r, whose store failed with err, by r's failure policy. It
// reports whether r counts as granting, or an error that fails the whole request.
func (t *tally) onFailure(ctx context.Context, r *Limiter, key string, req algo.Request, err error) (bool, error) {
	switch r.policy.kind {
	case failOpen:
		t.answers = append(t.answers, answer{d: Decision{Allowed: true}})
		t.addSoft(err)
		return true, nil
	case failFallback:
		// The fallback limiter is asked on the caller's context: it may be a composite,
		// which detaches its own store calls.
		res, ferr := r.policy.fallback.Reserve(t.caller, key, req.N, req.MaxWait)
		if res == nil || (ferr != nil && !res.OK()) {
			return false, fallbackErr(err, ferr)
		}
		t.answers = append(t.answers, answer{d: res.d, figures: res.d.Limit > 0 || !res.OK()})
		t.held = append(t.held, res.grants()...)
		t.addSoft(fallbackErr(err, ferr))
		return res.OK(), nil
	default:
		return false, err
	}
}

// callGroup is Limiter.call for the rules of one group: every rule's circuit breaker must
// let the call through, the shortest per-call timeout bounds it, and its outcome counts
// for every breaker. failed reports that the store was unavailable (the error handlers
// have been called). detached says ctx does not end with the caller's: bound the call.
func callGroup(ctx context.Context, ma store.MultiApplier, g group, req algo.Request, detached bool) (ds []Decision, ok, failed bool, err error) {
	probes := make([]bool, len(g.rules))
	for i, r := range g.rules {
		b := r.breaker
		if b == nil {
			continue
		}
		var pass bool
		if pass, probes[i] = b.allow(); !pass {
			for j, q := range g.rules[:i] {
				if q.breaker != nil {
					q.breaker.release(probes[j])
				}
			}
			if err := storecheck.ApplyAll(g.key, g.algs, req); err != nil {
				return nil, false, false, err
			}
			if err := storecheck.Context(ctx); err != nil {
				return nil, false, false, err
			}
			r.report(g.key, errCircuitOpen)
			return nil, false, true, errCircuitOpen
		}
	}
	var timeout time.Duration
	for _, r := range g.rules {
		if r.timeout > 0 && (timeout == 0 || r.timeout < timeout) {
			timeout = r.timeout
		}
	}
	if detached {
		timeout = detachedWithin(timeout)
	}
	if timeout > 0 {
		tctx, cancel := context.WithTimeout(ctx, timeout)
		ds, ok, err = ma.ApplyAll(tctx, g.key, g.algs, req)
		cancel()
	} else {
		ds, ok, err = ma.ApplyAll(ctx, g.key, g.algs, req)
	}
	if err == nil {
		for _, r := range g.rules {
			if r.breaker != nil {
				r.breaker.success()
			}
		}
		return ds, ok, false, nil
	}
	err, failed = g.rules[0].classify(ctx, err)
	for i, r := range g.rules {
		if b := r.breaker; b != nil {
			if failed {
				b.failure(probes[i])
			} else {
				b.release(probes[i])
			}
		}
		if failed {
			r.report(g.key, err)
		}
	}
	return nil, false, failed, err
}
