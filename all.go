package limiter

import (
	"fmt"
	"reflect"

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
// All returns an error wrapping ErrInvalidConfig when rules is empty or holds nil, or when two
// rules would share state (the same store, no key function, the same algorithm slot: wrap
// one with algo.Named). docs/composite.md explains the semantics in full.
func All(rules ...*Limiter) (*Limiter, error) {
	var flat []*Limiter
	for i, r := range rules {
		switch {
		case r == nil:
			return nil, fmt.Errorf("%w: All: rule %d is nil", ErrInvalidConfig, i+1)
		case r.set != nil:
			flat = append(flat, r.set.rules...)
		case r.store == nil:
			return nil, fmt.Errorf("%w: All: rule %d is not a Limiter made by New", ErrInvalidConfig, i+1)
		default:
			flat = append(flat, r)
		}
	}
	if len(flat) == 0 {
		return nil, fmt.Errorf("%w: All: no rules", ErrInvalidConfig)
	}
	c := &ruleSet{rules: flat, storeID: make([]int, len(flat))}
	for i, r := range flat {
		c.storeID[i] = i
		for j := 0; j < i; j++ {
			if sameStore(flat[j].store, r.store) {
				c.storeID[i] = c.storeID[j]
				break
			}
		}
	}
	for i, r := range flat {
		for j := 0; j < i; j++ {
			q := flat[j]
			if q != r && (c.storeID[i] != c.storeID[j] || r.keyFn != nil || q.keyFn != nil) {
				continue
			}
			if a, b := q.Algorithm(), r.Algorithm(); a.Slot() == b.Slot() {
				return nil, fmt.Errorf("%w: All: rules %d (%v) and %d (%v) would share the state slot %q of every key "+
					"in one store; wrap one algorithm with algo.Named to give it a slot of its own",
					ErrInvalidConfig, j+1, a, i+1, b, a.Slot())
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
	storeID []int // storeID[i] == storeID[j]: rules i and j share one store
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
