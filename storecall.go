package limiter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
)

// Every store call of the facade goes through here: the circuit breakers of the rules it
// decides for, a per-call timeout, and the classification of its error. One rule's call
// (callOne) and a group's atomic call (callGroup) share admit, refusal and settle.

// unavailable is the error of a store call that found the store unavailable (err wraps
// store.ErrUnavailable): the failure policy answers it (onFailure), so it never reaches
// a caller. The failure has been reported to the error handlers and counted by the
// breakers already.
type unavailable struct{ err error }

func (u *unavailable) Error() string { return u.err.Error() }
func (u *unavailable) Unwrap() error { return u.err }

// errCircuitOpen is the error of every call skipped by an open breaker, and circuitOpen
// the same as an unavailable store call. Both are built once so that a skipped call
// allocates nothing.
var (
	errCircuitOpen = fmt.Errorf("%w: %w", ErrCircuitOpen, store.ErrUnavailable)
	circuitOpen    = &unavailable{errCircuitOpen}
)

// callOne sends req for key under a to l's store, through l's circuit breaker and bounded
// by timeout (0: no bound).
//
// This is the path of Allow whenever there is a timeout or the breaker has counted a
// failure: no closure, no defer, no allocation unless a timeout is configured
// (context.WithTimeout allocates) or something fails.
func (l *Limiter) callOne(ctx context.Context, key string, a algo.Algorithm, req algo.Request, timeout time.Duration) (Decision, error) {
	rules, probes := [1]*Limiter{l}, [1]bool{}
	if r := admit(rules[:], probes[:]); r != nil {
		return Decision{}, refusal(ctx, r, key, store.Check(key, a, req))
	}
	var (
		d   Decision
		err error
	)
	if timeout > 0 {
		tctx, cancel := context.WithTimeout(ctx, timeout)
		d, err = l.store.Apply(tctx, key, a, req)
		cancel()
	} else {
		d, err = l.store.Apply(ctx, key, a, req)
	}
	if err = settle(ctx, rules[:], probes[:], key, err); err != nil {
		return Decision{}, err
	}
	return d, nil
}

// callGroup is callOne for the rules of one group, in one store.MultiApplier call: every
// rule's breaker must let it through, the shortest of their timeouts bounds it (bound by
// detachedWithin when detached says ctx does not end with the caller's), and its outcome
// counts for every breaker.
func callGroup(ctx context.Context, ma store.MultiApplier, g group, req algo.Request, detached bool) ([]Decision, bool, error) {
	var buf [8]bool
	probes := buf[:0]
	if len(g.rules) > len(buf) {
		probes = make([]bool, 0, len(g.rules))
	}
	probes = probes[:len(g.rules)]
	if r := admit(g.rules, probes); r != nil {
		return nil, false, refusal(ctx, r, g.key, store.CheckAll(g.key, g.algs, req))
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
	var (
		ds  []Decision
		ok  bool
		err error
	)
	if timeout > 0 {
		tctx, cancel := context.WithTimeout(ctx, timeout)
		ds, ok, err = ma.ApplyAll(tctx, g.key, g.algs, req)
		cancel()
	} else {
		ds, ok, err = ma.ApplyAll(ctx, g.key, g.algs, req)
	}
	if err = settle(ctx, g.rules, probes, g.key, err); err != nil {
		return nil, false, err
	}
	return ds, ok, nil
}

// admit asks the breaker of every rule to let one store call through, setting probes[i]
// when the call is rule i's half-open probe. When one refuses, it releases the probes
// claimed so far and returns that rule; else nil.
func admit(rules []*Limiter, probes []bool) *Limiter {
	for i, r := range rules {
		b := r.breaker
		if b == nil {
			continue
		}
		var pass bool
		if pass, probes[i] = b.allow(); !pass {
			for j, q := range rules[:i] {
				if q.breaker != nil {
					q.breaker.release(probes[j])
				}
			}
			return r
		}
	}
	return nil
}

// refusal is the error of a call r's open breaker kept from the store: bad input stays an
// input error (inputErr, the store's own check), and a done context the caller's, whatever
// the breaker's state. Otherwise the skipped call is reported and is circuitOpen.
func refusal(ctx context.Context, r *Limiter, key string, inputErr error) error {
	if inputErr != nil {
		return inputErr
	}
	if err := store.CheckContext(ctx); err != nil {
		return err
	}
	r.report(key, errCircuitOpen)
	return circuitOpen
}

// settle records the outcome of a store call admitted for rules (probes from admit) and
// returns its error: nil on success; an *unavailable, reported to every rule's error
// handler, when the store was unavailable; any other error as it is, releasing the probes.
// ctx is the caller's context: once it is done, the error is the caller's, not the store's.
func settle(ctx context.Context, rules []*Limiter, probes []bool, key string, err error) error {
	if err == nil {
		for _, r := range rules {
			if r.breaker != nil {
				r.breaker.success()
			}
		}
		return nil
	}
	err = classify(ctx, err)
	u, failed := err.(*unavailable)
	for i, r := range rules {
		if b := r.breaker; b != nil {
			if failed {
				b.failure(probes[i])
			} else {
				b.release(probes[i])
			}
		}
		if failed {
			r.report(key, u.err)
		}
	}
	return err
}

// classify tells a store failure, which the failure policy answers and which it returns as
// an *unavailable, from every other error, returned as it is. ctx is the caller's context:
// once it is done, the error is the caller's, not the store's.
func classify(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return err
	case errors.Is(err, store.ErrUnavailable):
		return &unavailable{err}
	case errors.Is(err, context.DeadlineExceeded):
		// Not the caller's deadline, so the per-call timeout or the store's own.
		return &unavailable{fmt.Errorf("%w: no answer in time: %w", store.ErrUnavailable, err)}
	default:
		return err
	}
}

// refundWithin gives n permits of the grant at back to l's store, bounded by timeout (0: no
// bound), skipped while l's breaker is open. Refunds do not move the breaker; a store
// failure is reported to the error handler and returned.
func (l *Limiter) refundWithin(ctx context.Context, key string, a algo.Algorithm, n, at int64, timeout time.Duration) error {
	if l.breaker != nil && l.breaker.open() {
		if err := store.CheckContext(ctx); err != nil {
			return err
		}
		l.report(key, errCircuitOpen)
		return errCircuitOpen
	}
	var err error
	if timeout > 0 {
		tctx, cancel := context.WithTimeout(ctx, timeout)
		err = l.store.Refund(tctx, key, a, n, at)
		cancel()
	} else {
		err = l.store.Refund(ctx, key, a, n, at)
	}
	if err == nil {
		return nil
	}
	if u, ok := classify(ctx, err).(*unavailable); ok {
		l.report(key, u.err)
		return u.err
	}
	return err
}

// detachedTimeout bounds a store call that runs detached from its caller's context (a
// refund after the caller gave up, a rule of a rule set) when the limiter has no
// WithTimeout: long enough for any store that answers at all, short enough that a hung one
// does not hold the caller for good.
const detachedTimeout = time.Second

// detachedWithin is the bound of a detached store call of a limiter with timeout.
func detachedWithin(timeout time.Duration) time.Duration {
	if timeout > 0 {
		return timeout
	}
	return detachedTimeout
}

// report passes a store failure to the error handler, if any.
func (l *Limiter) report(key string, err error) {
	if l.onError != nil {
		l.onError(key, err)
	}
}
