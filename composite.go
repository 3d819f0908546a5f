package limiter

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
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
	var flat []*rule
	for i, l := range rules {
		if l == nil {
			return nil, fmt.Errorf("%w: All: rule %d is nil", algo.ErrInvalidConfig, i+1)
		}
		if l.unmade() {
			return nil, fmt.Errorf("%w: All: rule %d is not a Limiter made by New", algo.ErrInvalidConfig, i+1)
		}
		flat = append(flat, l.rules...)
	}
	if len(flat) == 0 {
		return nil, fmt.Errorf("%w: All: no rules", algo.ErrInvalidConfig)
	}
	c := &Limiter{rules: flat, clock: flat[0].clock, storeID: make([]int, len(flat)), spaced: make([]atomic.Pointer[spacedBox], len(flat))}
	for i, r := range flat {
		c.storeID[i] = i
		for j := 0; j < i; j++ {
			if same(flat[j].store, r.store) {
				c.storeID[i] = c.storeID[j]
				break
			}
		}
	}
	return c, nil
}

// same reports whether a and b are one value, without panicking on a type == cannot
// compare: values of such a type are never the same (a store of such a type is never
// shared; an error of such a type is never joined once for two rules).
func same(a, b any) bool {
	ta := reflect.TypeOf(a)
	if ta == nil || ta != reflect.TypeOf(b) || !ta.Comparable() {
		return false
	}
	return a == b
}

// group is the rules of a Limiter that share a store and a key (after their key
// functions): the unit of the pipeline's call step.
type group struct {
	sid   int // storeOf its rules
	store store.Store
	key   string
	rules []*rule
	algs  []algo.Algorithm // each rule's algorithm (in its namespace), read once for this request
}

// plan is the pipeline's first step: the rules grouped by store and key, in the order of
// their first rule.
func (l *Limiter) plan(key string) []group {
	algs := l.ruleAlgs()
	gs := make([]group, 0, len(l.rules))
next:
	for i, r := range l.rules {
		k, sid := r.keyFor(key), l.storeOf(i)
		for j := range gs {
			if g := &gs[j]; g.sid == sid && g.key == k {
				g.rules, g.algs = append(g.rules, r), append(g.algs, algs[i])
				continue next
			}
		}
		gs = append(gs, group{sid: sid, store: r.store, key: k, rules: []*rule{r}, algs: []algo.Algorithm{algs[i]}})
	}
	return gs
}

// storeOf names the store of l's i-th rule: two rules share a store when it is the same.
func (l *Limiter) storeOf(i int) int {
	if l.storeID == nil {
		return 0 // a set of one
	}
	return l.storeID[i]
}

// atomic returns g's store when its rules are decided in one store.MultiApplier call, where
// every rule answers even after one denied: two rules or more, on such a store, none in
// shadow mode (a shadow rule's denial must not stop the others).
func (g *group) atomic() (store.MultiApplier, bool) {
	ma, ok := g.store.(store.MultiApplier)
	if !ok || len(g.rules) < 2 {
		return nil, false
	}
	for _, r := range g.rules {
		if r.shadow {
			return nil, false
		}
	}
	return ma, true
}

// Two rules of a composite never share a state, whatever their key functions return: a
// rule whose algorithm slot an earlier rule on the same store already has is applied under
// the slot ":<i>:<slot>", i being its position in the composite (from 1, after nested
// composites are flattened). On Redis that is <prefix>{<user key>}::<i>:<slot>: the hash
// tag is still the user key, so one script still applies the rules of one key. No slot of
// package algo, and no algo.Named slot, starts with ':'. Every other rule keeps the state it
// keeps used alone, and the position (not an identity of the process) names a namespace,
// so every process that builds the same composite reaches the same keys.

// ruleAlgs returns each rule's algorithm for one request, a rule's under its namespace
// when an earlier rule on its store has its slot.
func (l *Limiter) ruleAlgs() []algo.Algorithm {
	algs := make([]algo.Algorithm, 0, len(l.rules))
next:
	for i, r := range l.rules {
		b := r.alg.Load()
		slot := b.a.Slot()
		for j, e := range algs {
			if l.storeOf(j) == l.storeOf(i) && e.Slot() == slot {
				algs = append(algs, l.spacedAlg(i, b))
				continue next
			}
		}
		algs = append(algs, b.a)
	}
	return algs
}

// spacedBox is a rule's algorithm (box) and the same under the rule's namespace (a).
type spacedBox struct {
	box *algoBox
	a   algo.Algorithm
}

// spacedAlg returns rule i's algorithm b under its namespace, made again only when the
// rule's algorithm changes: the same value for every request, so that a store comparing
// configs (the local store, leasing) sees one config.
func (l *Limiter) spacedAlg(i int, b *algoBox) algo.Algorithm {
	for {
		cur := l.spaced[i].Load()
		if cur != nil && cur.box == b {
			return cur.a
		}
		// Concurrent first requests agree on one value: the first one stored.
		if s := (&spacedBox{box: b, a: inNamespace(i+1, b.a)}); l.spaced[i].CompareAndSwap(cur, s) {
			return s.a
		}
	}
}

// inNamespace returns a applied under the namespace of the composite's i-th rule: a
// pointer, so comparing two never panics, whatever a's type.
func inNamespace(i int, a algo.Algorithm) algo.Algorithm {
	s := &spaced{slot: ":" + strconv.Itoa(i) + ":" + a.Slot(), a: a}
	if _, ok := a.(algo.Scripted); ok {
		return spacedScripted{s}
	}
	return s
}

// spaced is an algorithm under a slot of its own and otherwise unchanged, as algo.Named
// makes one.
type spaced struct {
	slot string
	a    algo.Algorithm
}

// spacedScripted is a spaced algorithm whose inner algorithm has a Lua twin.
type spacedScripted struct{ *spaced }

var (
	_ algo.Algorithm = (*spaced)(nil)
	_ algo.Scripted  = spacedScripted{}
)

func (s *spaced) Name() string         { return s.a.Name() }
func (s *spaced) Validate() error      { return s.a.Validate() }
func (s *spaced) Slot() string         { return s.slot }
func (s *spaced) NewState() algo.State { return s.a.NewState() }
func (s *spaced) Apply(st algo.State, now int64, req algo.Request) algo.Decision {
	return s.a.Apply(st, now, req)
}
func (s *spaced) Refund(st algo.State, now int64, n int64, at int64) { s.a.Refund(st, now, n, at) }

// Unwrap returns the inner algorithm, so that what it implements (its capabilities, its
// quota) is found through the namespace.
func (s *spaced) Unwrap() algo.Algorithm { return s.a }

// String describes the inner algorithm: errors name the rule as it was given.
func (s *spaced) String() string {
	if st, ok := s.a.(fmt.Stringer); ok {
		return st.String()
	}
	return s.a.Name()
}

// Script returns the inner algorithm's Lua twin: only the key names differ, and the store
// builds them from the slot.
func (s spacedScripted) Script() *algo.Script { return s.a.(algo.Scripted).Script() }

// AppendArgs appends the inner algorithm's config arguments.
func (s spacedScripted) AppendArgs(args []any) []any { return s.a.(algo.Scripted).AppendArgs(args) }

// peek is Peek: each rule peeked at its own key, in the order and the groups Allow applies
// them, stopping where Allow stops, and combined as Allow combines.
func (l *Limiter) peek(ctx context.Context, key string) (Decision, error) {
	one := algo.Request{N: 1}
	var as []answer
	allowed := true
	for _, g := range l.plan(key) {
		_, atomic := g.atomic()
		for i, r := range g.rules {
			d, err := r.peek(ctx, g.key, g.algs[i], one)
			if err != nil {
				return Decision{}, err
			}
			as = append(as, answer{rule: r, d: d, figures: true})
			if !d.Allowed && !r.shadow {
				allowed = false
				if !atomic {
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

// peek peeks at key (after the key function) under a in the rule's store, bounded by the
// rule's timeout.
func (r *rule) peek(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (Decision, error) {
	ad, ok := r.store.(store.Admin)
	if !ok {
		return Decision{}, unsupported("Peek", r.store)
	}
	ctx, cancel := bounded(ctx, r.timeout)
	defer cancel()
	return ad.Peek(ctx, key, a, req)
}

// reset is Reset: one call per group, whose rules share a store and a key, bounded by the
// shortest timeout among them; every group even when one fails.
func (l *Limiter) reset(ctx context.Context, key string) error {
	var errs []error
	for _, g := range l.plan(key) {
		ad, ok := g.store.(store.Admin)
		if !ok {
			errs = append(errs, unsupported("Reset", g.store))
			continue
		}
		var timeout = g.rules[0].timeout
		for _, q := range g.rules[1:] {
			if q.timeout > 0 && (timeout == 0 || q.timeout < timeout) {
				timeout = q.timeout
			}
		}
		cctx, cancel := bounded(ctx, timeout)
		err := ad.Reset(cctx, g.key, g.algs...)
		cancel()
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// traceKey is the context key of TraceRules.
type traceKey struct{}

// TraceRules returns ctx carrying f, told by a composite (All), before it returns, each
// rule's own Decision, in order, for every rule whose store answered. A nil f returns ctx.
func TraceRules(ctx context.Context, f func(rule *Limiter, d Decision)) context.Context {
	if f == nil {
		return ctx
	}
	return context.WithValue(ctx, traceKey{}, f)
}

// traceRules passes the answers of a composite's request to the TraceRules function of
// ctx, if any.
func traceRules(ctx context.Context, as []answer) {
	f, ok := ctx.Value(traceKey{}).(func(*Limiter, Decision))
	if !ok {
		return
	}
	for _, a := range as {
		if a.traced && !a.rule.shadow {
			f(a.rule.lim, a.d)
		}
	}
}
