package limiter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
)

// Peek and Reset are for operators (an admin endpoint, a support tool, a test): they read
// or forget state and are not requests. So they skip the failure policy and the circuit
// breaker, whose job is to answer requests while a store is down: a store failure comes
// back as the error (wrapping ErrUnavailable), and nothing is reported to the error
// handler. WithTimeout still bounds each store call.

// Peek reports what Allow(ctx, key) would answer now, taking nothing: the same Allowed,
// Limit, RetryAfter and ResetAfter, so a Peek followed by an Allow with nothing in between
// answer alike. Its Remaining is what the key has now, before that Allow (algo.Peek): a
// fresh key of TokenBucket{Rate: 1, Burst: 10} peeks 10 where its first Allow leaves 9.
// Like golang.org/x/time/rate's Tokens, it creates no state for a new key and does not
// move an existing key's expiry. It is one atomic store call per rule
// (one round trip on Redis).
//
// For a composite made by All, each rule is peeked at its own key, in the order Allow
// applies them, and the answers are combined as Allow combines them; the rules are read
// one after the other, not at one instant.
//
// The store must implement store.Admin (both stores of the module do); otherwise Peek
// returns an error wrapping ErrUnsupported. A store failure is returned as the error,
// wrapping ErrUnavailable, with a zero Decision: the failure policy and the circuit
// breaker answer requests, not peeks.
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

// Reset forgets the state of key, so that its next request is answered as a new key's:
// the state its algorithm keeps (every Redis key of it), and for a composite made by All,
// the state of every rule at that rule's key. The state other limiters keep for the same
// key under other algorithm slots is left alone. It is one atomic store call per store and
// key (one round trip on Redis); the rules of a composite on different stores or keys are
// reset one after the other, all of them even when one fails, and the failures are
// returned joined.
//
// A request running at the same time as Reset is decided either before it (and then
// forgotten) or after it (on a fresh state). The store must implement store.Admin;
// otherwise Reset returns an error wrapping ErrUnsupported. A store failure is returned
// as the error, wrapping ErrUnavailable (no failure policy, no circuit breaker).
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
