package limiter

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
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
		case r.rules != nil:
			flat = append(flat, r.rules.rules...)
		case r.store == nil:
			return nil, fmt.Errorf("%w: All: rule %d is not a Limiter made by New", ErrInvalidConfig, i+1)
		default:
			flat = append(flat, r)
		}
	}
	if len(flat) == 0 {
		return nil, fmt.Errorf("%w: All: no rules", ErrInvalidConfig)
	}
	c := &composite{rules: flat, storeID: make([]int, len(flat)), clock: flat[0].clock}
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
				return nil, fmt.Errorf("%w: All: rules %d (%s) and %d (%s) would share the state slot %q of every key "+
					"in one store; wrap one algorithm with algo.Named to give it a slot of its own",
					ErrInvalidConfig, j+1, describe(a), i+1, describe(b), a.Slot())
			}
		}
	}
	l := &Limiter{clock: c.clock, rules: c}
	c.self = l
	return l, nil
}

// Rules returns the rules of a composite made by All, in the order they are applied, and
// nil for any other Limiter.
func (l *Limiter) Rules() []*Limiter {
	if l == nil || l.rules == nil {
		return nil
	}
	return append([]*Limiter(nil), l.rules.rules...)
}

// keyFor is the key the limiter limits for key (WithKeyFunc).
func (l *Limiter) keyFor(key string) string {
	if l.keyFn == nil {
		return key
	}
	return l.keyFn(key)
}

// composite is what All builds a Limiter around.
type composite struct {
	self    *Limiter // the Limiter All returned, which reservations point to
	rules   []*Limiter
	storeID []int // storeID[i] == storeID[j]: rules i and j share one store
	clock   clockx.Clock
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

func describe(a algo.Algorithm) string {
	if s, ok := a.(fmt.Stringer); ok {
		return s.String()
	}
	return a.Name()
}

// grant is one rule's share of a composite grant: what it takes to refund it.
type grant struct {
	lim *Limiter // the limiter whose store holds it
	key string   // after the limiter's key function
	alg algo.Algorithm
	n   int64
	at  int64
}

// grants returns what a granted Reservation holds, for a composite that received it from a
// Fallback limiter.
func (r *Reservation) grants() []grant {
	switch {
	case r.lim == nil:
		return nil
	case r.parts != nil:
		return r.parts
	default:
		return []grant{{lim: r.lim, key: r.key, alg: r.alg, n: r.n, at: r.d.At}}
	}
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

// answer is one rule's answer to a composite request.
type answer struct {
	d       Decision
	figures bool // false for a FailOpen answer, which has no Limit or Remaining
}

// combine builds the composite Decision from the rules' answers (see All).
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

// names lists the rules of a group for an error message.
func names(algs []algo.Algorithm) string {
	n := make([]string, len(algs))
	for i, a := range algs {
		n[i] = describe(a)
	}
	return strings.Join(n, ", ")
}
