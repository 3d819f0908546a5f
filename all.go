package limiter

import (
	"fmt"
	"reflect"

	"github.com/ratekit/limiter/store"
)

// All returns a Limiter that grants a request only when every one of rules grants it, and
// then takes the permits from all of them; when one denies, nothing is taken from any. It
// is a *Limiter like any other: Allow, Reserve, Wait, TryAcquire and httplimit.Middleware
// work on it unchanged. Each rule keeps its own store, algorithm (which SetAlgorithm on the
// rule may change), key function (WithKeyFunc), failure policy, timeout and circuit
// breaker; the composite sleeps on the clock of its first rule. A composite passed to All
// contributes its rules.
//
// How "nothing is taken" is achieved depends on where the rules keep their state:
//
//   - Rules on one store and one key (after their key functions), such as "100 per second
//     AND 20 per 100 ms" on an API key, are checked and taken in one atomic step when the
//     store implements store.MultiApplier (both stores of this module do: the local store
//     under one lock, the Redis store in one script). A denial leaves every state exactly
//     as it was, and no concurrent caller can see a permit taken and given back.
//   - Rules on different keys or different stores ("per user AND per item") are applied one
//     group after the other, in the order given; when a group denies, the permits the
//     earlier groups granted are refunded (store.Refund with each grant's At) and the later
//     groups are not asked. These are refund semantics: until the refund lands, a
//     concurrent caller may see those permits taken (and be denied for it), and a refund
//     restores only what the algorithm can restore (a window that has passed is not
//     reopened). Put the rule most likely to deny first.
//
// A composite call that fails, or whose caller gives up (ctx ends) before it returns, takes
// nothing: what earlier rules granted is refunded, also on the Wait and TryAcquire paths
// when ctx ends during the sleep. For this the rules' store calls and the refunds run on a
// context detached from the caller's cancellation (context.WithoutCancel), each bounded by
// its rule's WithTimeout, or by one second when the rule has none; a caller whose context
// ends while a store call is in flight gets its error when that call returns (a Redis
// script that was sent runs whatever the client does), after the refunds.
//
// The composite's Decision: when every rule grants, Allowed, with the Limit and Remaining of
// the rule with the smallest Remaining (the one that binds next), the largest ResetAfter,
// the largest Wait (with MaxWait every rule reserves within the same bound and the request
// may act once all of them allow it; a rule whose wait was shorter sees its permits used
// at the later time) and the At of the rule with that Wait. When a rule denies: not
// Allowed, RetryAfter the largest among the rules that denied (algo.Never if any of them
// says Never: the request can never be granted), the Limit and Remaining of the denying
// rule with the smallest Remaining, and the largest ResetAfter of the rules asked.
//
// When a rule's store is unavailable, that rule's failure policy answers for it: FailClosed
// fails the whole request (nothing is taken); FailOpen counts the rule as granting, without
// figures; Fallback(l) asks l (Reserve with the same bound, on the rule's key). The store's
// error then comes back beside the composite's Decision, which may be allowed.
//
// All returns an error wrapping ErrInvalidConfig when rules is empty or holds nil, and when
// two rules would share state: the same store, no key function on either, and the same
// algorithm slot (two TokenBuckets on one key both use the slot "tb"; wrap one with
// algo.Named). Rules whose key functions may map one key to the same string are checked
// at each call instead, which then fails with ErrInvalidConfig.
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
