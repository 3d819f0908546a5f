package limiter

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
)

// All returns a Limiter that grants a request only when every rule grants it, and then
// takes the permits from all of them; when one denies, nothing is taken from any (rules on
// other keys or stores are refunded, so a concurrent caller may see their permits taken
// until the refund lands). Rules on one store and key are decided in one atomic step
// (store.MultiApplier). Each rule keeps its own store, algorithm, key function, failure
// policy, timeout and breaker; a composite passed to All contributes its rules; the
// composite sleeps on its first rule's clock. Its Decision carries the binding rule's Limit
// and Remaining, the largest ResetAfter and Wait, and when denied the largest RetryAfter
// of the rules that denied it (a rule in shadow mode counts as granting: its figures count
// only in a grant). Two rules of one composite never share a state (see docs/composite.md). It returns an
// error wrapping algo.ErrInvalidConfig when rules is empty or holds nil.
func All(rules ...*Limiter) (*Limiter, error) {
	var flat []*Limiter
	for i, r := range rules {
		switch {
		case r == nil:
			return nil, fmt.Errorf("%w: All: rule %d is nil", algo.ErrInvalidConfig, i+1)
		case r.set != nil:
			flat = append(flat, r.set.rules...)
		case r.store == nil:
			return nil, fmt.Errorf("%w: All: rule %d is not a Limiter made by New", algo.ErrInvalidConfig, i+1)
		default:
			flat = append(flat, r)
		}
	}
	if len(flat) == 0 {
		return nil, fmt.Errorf("%w: All: no rules", algo.ErrInvalidConfig)
	}
	c := &ruleSet{rules: flat, storeID: make([]int, len(flat)), spaced: make([]atomic.Pointer[spacedBox], len(flat))}
	for i, r := range flat {
		c.storeID[i] = i
		for j := 0; j < i; j++ {
			if sameStore(flat[j].store, r.store) {
				c.storeID[i] = c.storeID[j]
				break
			}
		}
	}
	// The rule set sleeps on its first rule's clock.
	return &Limiter{clock: flat[0].clock, set: c}, nil
}

// ruleSet is what All builds a Limiter around: its rules, decided all or nothing
// (ruleset.go).
type ruleSet struct {
	rules   []*Limiter
	storeID []int                       // storeID[i] == storeID[j]: rules i and j share one store
	spaced  []atomic.Pointer[spacedBox] // each rule's algorithm in its namespace (spacedAlg)
}

// sameStore reports whether a and b are one store, without panicking on a store type that
// is not comparable (such a store is never shared).
func sameStore(a, b store.Store) bool {
	ta := reflect.TypeOf(a)
	if ta != reflect.TypeOf(b) || !ta.Comparable() {
		return false
	}
	return a == b
}

// decide answers q for key under every rule, all or nothing (see All). Each rule applies
// its own key function; o.key is key as given.
//
// A caller that gives up (ctx ends) must not leave permits taken that it never gets. A
// store call abandoned in flight may still change the state (a Redis script runs once
// sent) without telling which grant to refund, so the rules' store calls run detached from
// ctx, each bounded by its rule's timeout or detachedTimeout; ctx is checked before each
// group and at the end, and when it has ended everything granted is refunded.
func (c *ruleSet) run(ctx context.Context, key string, q request, o *outcome) (Decision, error) {
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

// ruleAlgs returns each rule's algorithm for one request, a rule's under its namespace
// when an earlier rule on its store has its slot (see above). buf is scratch space.
func (c *ruleSet) ruleAlgs(buf []algo.Algorithm) []algo.Algorithm {
	algs := buf[:0]
next:
	for i, r := range c.rules {
		b := r.alg.Load()
		slot := b.a.Slot()
		for j, e := range algs {
			if c.storeID[j] == c.storeID[i] && e.Slot() == slot {
				algs = append(algs, c.spacedAlg(i, b))
				continue next
			}
		}
		algs = append(algs, b.a)
	}
	return algs
}

// spacedAlg returns rule i's algorithm b under its namespace, made again only when the
// rule's algorithm changes (SetAlgorithm): the same value for every request, so that a
// store comparing configs (the local store, leasing) sees one config.
func (c *ruleSet) spacedAlg(i int, b *algoBox) algo.Algorithm {
	for {
		cur := c.spaced[i].Load()
		if cur != nil && cur.box == b {
			return cur.a
		}
		// Concurrent first requests agree on one value: the first one stored.
		if s := (&spacedBox{box: b, a: inNamespace(i+1, b.a)}); c.spaced[i].CompareAndSwap(cur, s) {
			return s.a
		}
	}
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

// peek is Peek for the rule set: each rule peeked at its own key, in the order and the
// groups Allow applies them, stopping where Allow stops, and combined as Allow combines.
func (c *ruleSet) peek(ctx context.Context, key string) (Decision, error) {
	one := algo.Request{N: 1}
	var as []answer
	allowed := true
	for _, g := range c.groups(key) {
		for i, r := range g.rules {
			d, err := r.peek(ctx, g.key, g.algs[i], one)
			if err != nil {
				return Decision{}, err
			}
			as = append(as, answer{d: d, figures: true})
			if !d.Allowed {
				allowed = false
				if _, atomic := g.atomic(); !atomic {
					break // Allow stops at a denial, except inside one atomic step
				}
			}
		}
		if !allowed {
			break
		}
	}
	return combine(as, allowed), nil
}

// reset is Reset for the rule set: one call per group, whose rules share a store and a
// key, bounded by the shortest timeout among them; every group even when one fails.
func (c *ruleSet) reset(ctx context.Context, key string) error {
	var errs []error
	for _, g := range c.groups(key) {
		r := g.rules[0]
		for _, q := range g.rules[1:] {
			if q.timeout > 0 && (r.timeout == 0 || q.timeout < r.timeout) {
				r = q
			}
		}
		if err := r.reset(ctx, g.key, g.algs...); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
