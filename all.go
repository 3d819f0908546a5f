package limiter

import (
	"fmt"
	"reflect"
	"sync/atomic"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
)

// All returns a Limiter that grants a request only when every one of rules grants it, and
// then takes the permits from all of them; when one denies, nothing is taken from any. The
// result is a *Limiter like any other; each rule keeps its own store, algorithm, key
// function, failure policy, timeout and circuit breaker, and a composite passed to All
// contributes its rules. The composite sleeps on the clock of its first rule.
//
// Rules on one store and one key are checked and taken in one atomic step (store.MultiApplier).
// Rules on different keys or stores are applied in the order given, refunding earlier grants
// when a later rule denies: until the refund lands a concurrent caller may see those permits
// taken. A call that fails, or whose ctx ends before it returns, takes nothing. A rule whose
// store is unavailable is answered by that rule's failure policy.
//
// The composite Decision carries the binding rule's Limit and Remaining, the largest
// ResetAfter and Wait, and when denied the largest RetryAfter among the rules that denied.
//
// Two rules never share a state, whatever their key functions return: a rule whose
// algorithm slot an earlier rule on the same store already has (the same algorithm and
// window, not told apart by algo.Named) keeps its state in a namespace of its own, named by
// its position in the composite (nested composites flattened), under the same hash tag,
// so rules on one key stay atomic in one Cluster slot. Every other rule keeps the state it
// keeps when used alone: a rule used alone and in a composite counts both against one
// limit.
//
// All returns an error wrapping algo.ErrInvalidConfig when rules is empty or holds nil.
// docs/composite.md explains the semantics in full.
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

// Rules returns the rules of a composite made by All, in the order they are applied, and
// nil for any other Limiter.
func (l *Limiter) Rules() []*Limiter {
	if l == nil || l.set == nil {
		return nil
	}
	return append([]*Limiter(nil), l.set.rules...)
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
