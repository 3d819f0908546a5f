package limiter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
)

// Peek reports what Allow(ctx, key) would answer now, taking nothing, creating no state and
// moving no expiry; its Remaining is what the key has now, before that Allow. A composite
// peeks its rules in Allow's order and combines them as Allow does (not at one instant).
// Peek and Reset are for operators: no failure policy, breaker or error handler; a store
// failure is returned (wrapping ErrUnavailable), and a store without store.Admin gives
// ErrUnsupported. WithTimeout bounds each call.
func (l *Limiter) Peek(ctx context.Context, key string) (Decision, error) {
	if l.unmade() {
		return Decision{}, errUnmade
	}
	one := algo.Request{N: 1}
	if l.set == nil {
		return l.peekRule(ctx, l.keyFor(key), l.alg.Load().a, one)
	}
	var as []answer
	allowed := true
	for _, g := range l.set.groups(key) {
		for i, r := range g.rules {
			d, err := r.peekRule(ctx, g.key, g.algs[i], one)
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

// peekRule peeks at key (after the key function) under a in l's store, bounded by l's
// timeout.
func (l *Limiter) peekRule(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (Decision, error) {
	ad, ok := l.store.(store.Admin)
	if !ok {
		return Decision{}, unsupported("Peek", l.store)
	}
	ctx, cancel := withTimeout(ctx, l.timeout)
	defer cancel()
	return ad.Peek(ctx, key, a, req)
}

// Reset forgets the state of key (for a composite, every rule's at its key), so that its
// next request is answered as a new key's; other algorithm slots are left alone. It is one
// atomic call per store and key; a composite resets all of them even when one fails and
// returns the failures joined. A concurrent request is decided before or after it, never
// on a mix. Errors as Peek's.
func (l *Limiter) Reset(ctx context.Context, key string) error {
	if l.unmade() {
		return errUnmade
	}
	if l.set == nil {
		return l.resetRules(ctx, l.keyFor(key), l.alg.Load().a)
	}
	var errs []error
	for _, g := range l.set.groups(key) {
		// The group's rules share a store and a key, so one call resets them; the
		// shortest timeout among them bounds it.
		r := g.rules[0]
		for _, q := range g.rules[1:] {
			if q.timeout > 0 && (r.timeout == 0 || q.timeout < r.timeout) {
				r = q
			}
		}
		if err := r.resetRules(ctx, g.key, g.algs...); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// resetRules resets key (after the key function) under rules in l's store, bounded by l's
// timeout.
func (l *Limiter) resetRules(ctx context.Context, key string, rules ...algo.Algorithm) error {
	ad, ok := l.store.(store.Admin)
	if !ok {
		return unsupported("Reset", l.store)
	}
	ctx, cancel := withTimeout(ctx, l.timeout)
	defer cancel()
	return ad.Reset(ctx, key, rules...)
}

// unsupported is the error of an admin call on a store without store.Admin.
func unsupported(op string, s store.Store) error {
	return fmt.Errorf("%w: limiter: %s needs a store implementing store.Admin; %T does not", ErrUnsupported, op, s)
}

// withTimeout bounds ctx by timeout, when positive.
func withTimeout(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout > 0 {
		return context.WithTimeout(ctx, timeout)
	}
	return ctx, func() {}
}
