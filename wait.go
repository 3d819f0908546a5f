package limiter

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
)

// Wait is WaitN(ctx, key, 1).
func (l *Limiter) Wait(ctx context.Context, key string) error {
	return l.WaitN(ctx, key, 1)
}

// WaitN blocks, on the limiter's clock, until n permits for key are granted, holding no
// lock while it sleeps. It reserves only a wait that ends before ctx's deadline, and
// otherwise returns ErrWouldExceedDeadline at once; a denial that waiting can fix (a full
// LeakyBucket queue) is slept on and asked again.
//
// The blocking calls (WaitN, TryAcquire) follow one rule: they succeed (nil, true) only
// with the permits granted and usable now; every other return holds nothing (what was
// reserved is given back). The error says why: ErrInvalidRequest (n ≤ 0), ErrExceedsLimit
// (never grantable), ErrWouldExceedDeadline, ctx.Err() (ctx ended), or the store failure
// under FailClosed. Under FailOpen they succeed at once, the failure going to the error
// handler only; under Fallback(l2) they wait for what l2 grants. TryAcquire's (false, nil)
// alone is no error: the permits would come later than its timeout.
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

// TryAcquire takes n permits for key if they are available now or within timeout
// (negative: 0) and before ctx's deadline, sleeping until they are usable: Guava's
// tryAcquire. It returns (false, nil) at once, taking nothing, when they would come later.
// Its other results follow WaitN's rule.
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
