package limiter

import (
	"fmt"
	"reflect"
	"sync/atomic"

	"github.com/ratekit/limiter/store"
)

// All returns a Limiter that grants a request only when every rule grants it, and then
// takes the permits from all of them; when one denies, nothing is taken from any (rules on
// other keys or stores are refunded, so a concurrent caller may see their permits taken
// until the refund lands). Rules on one store and key are decided in one atomic step
// (store.MultiApplier). Each rule keeps its own store, algorithm, key function, failure
// policy, timeout and breaker; a composite passed to All contributes its rules; the
// composite sleeps on its first rule's clock. Its Decision carries the binding rule's Limit
// and Remaining, the largest ResetAfter and Wait, and when denied the largest RetryAfter.
// Two rules of one composite never share a state (see docs/composite.md). It returns an
// error wrapping ErrInvalidConfig when rules is empty or holds nil.
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
