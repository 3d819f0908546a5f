package limiter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/storecheck"
	"github.com/ratekit/limiter/store"
)

// The guard of every store call of the facade: the circuit breakers of the rules it decides
// for, a per-call timeout, and the classification of its error. One rule's call (callOne)
// and a group's atomic call (callGroup) share refusal, classify and record; Allow's fast
// path, which skips the guard while it has nothing to do, shares classify and record.

// unavailable is the error of a store call that found the store unavailable (err wraps
// store.ErrUnavailable): the failure policy answers it (onFailure), so it never reaches
// a caller. The failure has been reported to the error handlers and counted by the
// breakers already, when it is an outage: not when the store marked it as one key's
// (store.ErrKeyUnavailable), since the store answered.
type unavailable struct {
	err    error
	outage bool
}

func (u *unavailable) Error() string { return u.err.Error() }
func (u *unavailable) Unwrap() error { return u.err }

// errCircuitOpen is the error of every call skipped by an open breaker, and circuitOpen
// the same as an unavailable store call. Both are built once so that a skipped call
// allocates nothing.
var (
	errCircuitOpen = fmt.Errorf("%w: %w", ErrCircuitOpen, store.ErrUnavailable)
	circuitOpen    = &unavailable{errCircuitOpen, true}
)

// callOne sends req for key under a to l's store, through l's circuit breaker and bounded
// by timeout (0: no bound). When l has an observer it also returns the call's latency on
// the monotonic clock: 0 when no call was made (the breaker refused it).
//
// This is the guard of every store call of one rule off Allow's fast path: no closure, no
// defer, no allocation unless a timeout is configured (context.WithTimeout allocates) or
// something fails.
func (l *Limiter) callOne(ctx context.Context, key string, a algo.Algorithm, req algo.Request, timeout time.Duration) (Decision, time.Duration, error) {
	probe := false
	if b := l.breaker; b != nil {
		var pass bool
		if pass, probe = b.allow(); !pass {
			return Decision{}, 0, refusal(ctx, l, key, storecheck.Apply(key, a, req))
		}
	}
	var (
		d     Decision
		err   error
		start time.Time
		lat   time.Duration
	)
	if l.obs != nil {
		start = time.Now()
	}
	if timeout > 0 {
		tctx, cancel := context.WithTimeout(ctx, timeout)
		d, err = l.store.Apply(tctx, key, a, req)
		cancel()
	} else {
		d, err = l.store.Apply(ctx, key, a, req)
	}
	if l.obs != nil {
		lat = time.Since(start)
	}
	if err != nil {
		err = classify(ctx, err)
		l.record(key, err, probe)
		return Decision{}, lat, err
	}
	if l.breaker != nil {
		l.breaker.success()
	}
	return d, lat, nil
}

// callGroup is callOne for the rules of one group, in one store.MultiApplier call: every
// rule's breaker must let it through, the shortest of their timeouts bounds it (bound by
// detachedWithin when detached says ctx does not end with the caller's), and its outcome
// counts for every breaker. Its latency is measured when timed (a rule has an observer).
func callGroup(ctx context.Context, ma store.MultiApplier, g group, req algo.Request, detached, timed bool) ([]Decision, bool, time.Duration, error) {
	var buf [8]bool
	probes := buf[:0]
	if len(g.rules) > len(buf) {
		probes = make([]bool, 0, len(g.rules))
	}
	probes = probes[:len(g.rules)]
	for i, r := range g.rules {
		b := r.breaker
		if b == nil {
			continue
		}
		var pass bool
		if pass, probes[i] = b.allow(); !pass {
			for j, q := range g.rules[:i] {
				if q.breaker != nil {
					q.breaker.release(probes[j])
				}
			}
			return nil, false, 0, refusal(ctx, r, g.key, storecheck.ApplyAll(g.key, g.algs, req))
		}
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
		ds    []Decision
		ok    bool
		err   error
		start time.Time
		lat   time.Duration
	)
	if timed {
		start = time.Now()
	}
	if timeout > 0 {
		tctx, cancel := context.WithTimeout(ctx, timeout)
		ds, ok, err = ma.ApplyAll(tctx, g.key, g.algs, req)
		cancel()
	} else {
		ds, ok, err = ma.ApplyAll(ctx, g.key, g.algs, req)
	}
	if timed {
		lat = time.Since(start)
	}
	if err != nil {
		err = classify(ctx, err)
		for i, r := range g.rules {
			r.record(g.key, err, probes[i])
		}
		return nil, false, lat, err
	}
	for _, r := range g.rules {
		if r.breaker != nil {
			r.breaker.success()
		}
	}
	return ds, ok, lat, nil
}

// refusal is the error of a call r's open breaker kept from the store: bad input stays an
// input error (inputErr, the store's own check), and a done context the caller's, whatever
// the breaker's state. Otherwise the skipped call is reported and is circuitOpen.
func refusal(ctx context.Context, r *Limiter, key string, inputErr error) error {
	if inputErr != nil {
		return inputErr
	}
	if err := storecheck.Context(ctx); err != nil {
		return err
	}
	r.report(key, errCircuitOpen)
	return circuitOpen
}

// record moves l's breaker by the error of a store call it let through (probe: as its
// half-open probe), classified: an *unavailable is reported to the error handler, and
// is a failure of the store when it is an outage, else (one key's failure) an answer of
// the store; any other error (bad input, the caller's done context) tells nothing about
// the store. (A success is the breaker's success, called on the spot.)
func (l *Limiter) record(key string, err error, probe bool) {
	u, failed := err.(*unavailable)
	if b := l.breaker; b != nil {
		switch {
		case failed && u.outage:
			b.failure(probe)
		case failed:
			b.success()
		default:
			b.release(probe)
		}
	}
	if failed {
		l.report(key, u.err)
	}
}

// classify tells a store failure, which the failure policy answers and which it returns as
// an *unavailable, from every other error, returned as it is. ctx is the caller's context:
// once it is done, the error is the caller's, not the store's. It is the one place where
// the facade reads what a store's error means: the store says which of its failures
// concern one key (store.ErrKeyUnavailable) rather than the store; every other failure,
// and a deadline, is an outage.
func classify(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return err
	case errors.Is(err, store.ErrUnavailable):
		return &unavailable{err, !errors.Is(err, store.ErrKeyUnavailable)}
	case errors.Is(err, context.DeadlineExceeded):
		// Not the caller's deadline, so the per-call timeout or the store's own.
		return &unavailable{fmt.Errorf("%w: no answer in time: %w", store.ErrUnavailable, err), true}
	default:
		return err
	}
}

// refundWithin gives n permits of the grant at back to l's store, bounded by timeout (0: no
// bound), skipped while l's breaker is open. Refunds do not move the breaker; a store
// failure is reported to the error handler and returned.
func (l *Limiter) refundWithin(ctx context.Context, key string, a algo.Algorithm, n, at int64, timeout time.Duration) error {
	if l.breaker != nil && l.breaker.open() {
		if err := storecheck.Context(ctx); err != nil {
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
