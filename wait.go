package limiter

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
)

// Wait blocks until one permit for key is granted. It is WaitN(ctx, key, 1).
func (l *Limiter) Wait(ctx context.Context, key string) error {
	return l.WaitN(ctx, key, 1)
}

// WaitN blocks until n permits for key are granted, or ctx ends. It reserves first and
// then sleeps on the limiter's clock, holding no lock or connection while it sleeps.
//
// When ctx has a deadline, WaitN reserves only a wait that ends before it: if the permits
// would come later it returns an error wrapping ErrWouldExceedDeadline at once, reserving
// nothing. Without a deadline it waits as long as needed; a request denied even so (a
// LeakyBucket queue that is full) sleeps until it would fit and tries again. If ctx ends
// during the sleep, WaitN gives the reserved permits back (see Reservation.Cancel) and
// returns ctx.Err().
//
// It returns an error wrapping ErrInvalidRequest when n ≤ 0 and one wrapping
// ErrExceedsLimit, at once, when n is more than the algorithm can ever grant. When the
// store is unavailable: FailClosed returns the store error, FailOpen returns nil at once
// (after calling the error handler), and Fallback(l2) waits for what l2 grants.
func (l *Limiter) WaitN(ctx context.Context, key string, n int64) error {
	if n <= 0 {
		return invalidN(n)
	}
	if l.unmade() {
		return errUnmade
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		maxWait := algo.Forever
		deadline, hasDeadline := ctx.Deadline()
		if hasDeadline {
			// A context deadline is real time, whatever clock the limiter sleeps on.
			maxWait = max(0, time.Until(deadline))
		}
		var o outcome
		d, err := l.decide(ctx, key, request{N: n, MaxWait: maxWait}, &o)
		switch {
		case err != nil:
			return err
		case d.Allowed:
			return l.sleep(ctx, l.reservation(n, d, &o))
		case d.RetryAfter == algo.Never:
			return exceeds(o.key, n, d.Limit)
		case hasDeadline:
			return fmt.Errorf("%w: key %q: n=%d cannot be granted within %v (retry after %v)",
				ErrWouldExceedDeadline, o.key, n, maxWait, d.RetryAfter)
		}
		if err := o.holder(l).clock.Sleep(ctx, max(d.RetryAfter, time.Microsecond)); err != nil {
			return err
		}
	}
}

// sleep waits for a granted reservation; if ctx ends first it gives the permits back and
// returns ctx.Err().
func (l *Limiter) sleep(ctx context.Context, r *Reservation) error {
	if err := r.Wait(ctx); err != nil {
		// ctx is done, but the refund must still reach the store, also when the permits'
		// time came as ctx ended: the caller did not get them. A failed refund is reported
		// to the error handler; the caller's error is its context's.
		_ = r.abandon(ctx)
		return err
	}
	return nil
}

// TryAcquire takes n permits for key if they are available now or will be within timeout,
// sleeping (on the limiter's clock) until they are; it is Guava's tryAcquire. It returns
// (true, nil) once the permits may be used, and (false, nil) at once, reserving nothing,
// when they would come later than timeout (a negative timeout is 0: no waiting) or later
// than ctx's deadline. If ctx ends during the sleep the permits are given back and it
// returns (false, ctx.Err()).
//
// It returns an error wrapping ErrInvalidRequest when n ≤ 0 and one wrapping
// ErrExceedsLimit when n is more than the algorithm can ever grant. When the store is
// unavailable: FailClosed returns (false, err), FailOpen returns (true, nil) at once (after
// calling the error handler), and Fallback(l2) takes what l2 grants within timeout.
func (l *Limiter) TryAcquire(ctx context.Context, key string, n int64, timeout time.Duration) (bool, error) {
	if n <= 0 {
		return false, invalidN(n)
	}
	if l.unmade() {
		return false, errUnmade
	}
	if err := ctx.Err(); err != nil {
		return false, err
	}
	maxWait := max(timeout, 0)
	if deadline, ok := ctx.Deadline(); ok {
		maxWait = min(maxWait, max(0, time.Until(deadline)))
	}
	var o outcome
	d, err := l.decide(ctx, key, request{N: n, MaxWait: maxWait}, &o)
	switch {
	case err != nil:
		return false, err
	case d.Allowed:
		if err := l.sleep(ctx, l.reservation(n, d, &o)); err != nil {
			return false, err
		}
		return true, nil
	case d.RetryAfter == algo.Never:
		return false, exceeds(o.key, n, d.Limit)
	default:
		return false, nil
	}
}
