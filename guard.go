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

// The guard of every store call: the circuit breakers of the rules it decides for, a
// per-call timeout, and the classification of its error. One rule's call (rule.callOne)
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
			return nil, false, 0, refusal(ctx, &r.rule, g.key, storecheck.ApplyAll(g.key, g.algs, req))
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
func refusal(ctx context.Context, r *rule, key string, inputErr error) error {
	if inputErr != nil {
		return inputErr
	}
	if err := storecheck.Context(ctx); err != nil {
		return err
	}
	r.report(key, errCircuitOpen)
	return circuitOpen
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

// withTimeout bounds ctx by timeout, when positive.
func withTimeout(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if timeout > 0 {
		return context.WithTimeout(ctx, timeout)
	}
	return ctx, func() {}
}

// unsupported is the error of an admin call on a store without store.Admin.
func unsupported(op string, s store.Store) error {
	return fmt.Errorf("%w: limiter: %s needs a store implementing store.Admin; %T does not", store.ErrUnsupported, op, s)
}
