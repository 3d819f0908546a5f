package limiter

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
)

// Reservation is a grant of permits that may only be used after a delay. Get one with
// Reserve; sleep with Wait (or Delay and a timer of your own), or give the permits back with
// Cancel. A Reservation is safe for concurrent use.
type Reservation struct {
	lim     *Limiter // the limiter whose store holds the grant; nil when nothing is held
	clock   clockx.Clock
	key     string
	alg     algo.Algorithm
	n       int64
	d       Decision
	readyAt time.Time   // on the facade's clock: when the permits may be used
	done    atomic.Bool // Cancel has run
	parts   []grant     // a composite's grants, one per rule that holds one (composite.go)
}

// Reserve asks for n permits of key that may be used within maxWait: it is granted when
// the permits are available now or will be within maxWait (algo.Forever puts no bound; a
// negative maxWait is 0), and then it commits them, so later requests queue behind it.
// The Reservation is OK when granted; its Delay is how long to wait before using them.
// Nothing is taken when it is not OK.
//
// It returns a nil Reservation and an error wrapping ErrInvalidRequest when n ≤ 0, or the
// store's error for an empty key. When the store is unavailable it returns the failure
// policy's Reservation together with the store error: not OK under FailClosed, OK with no
// delay under FailOpen (nothing was taken, so Cancel does nothing), and the fallback
// limiter's Reservation under Fallback.
func (l *Limiter) Reserve(ctx context.Context, key string, n int64, maxWait time.Duration) (*Reservation, error) {
	if n <= 0 {
		return nil, invalidN(n)
	}
	if l.unmade() {
		return nil, errUnmade
	}
	maxWait = max(maxWait, 0)
	if l.rules != nil {
		return l.rules.reserve(ctx, key, n, maxWait)
	}
	key = l.keyFor(key)
	a := l.alg.Load().a
	d, failed, err := l.call(ctx, key, a, algo.Request{N: n, MaxWait: maxWait})
	if failed {
		return l.reserveOnFailure(ctx, key, n, maxWait, err)
	}
	if err != nil {
		return nil, err
	}
	return l.newReservation(key, a, n, d), nil
}

// newReservation records a store decision, timing it on the limiter's clock.
func (l *Limiter) newReservation(key string, a algo.Algorithm, n int64, d Decision) *Reservation {
	r := &Reservation{clock: l.clock, key: key, alg: a, n: n, d: d, readyAt: l.clock.Now()}
	if d.Allowed {
		r.lim = l
		r.readyAt = r.readyAt.Add(d.Wait)
	}
	return r
}

// reserveOnFailure answers a Reserve whose store call failed with err, by the policy.
func (l *Limiter) reserveOnFailure(ctx context.Context, key string, n int64, maxWait time.Duration, err error) (*Reservation, error) {
	switch l.policy.kind {
	case failOpen:
		return &Reservation{clock: l.clock, key: key, n: n, d: Decision{Allowed: true}, readyAt: l.clock.Now()}, err
	case failFallback:
		r, ferr := l.policy.fallback.Reserve(ctx, key, n, maxWait)
		return r, fallbackErr(err, ferr)
	default:
		return &Reservation{clock: l.clock, key: key, n: n, readyAt: l.clock.Now()}, err
	}
}

// OK reports whether the permits were granted.
func (r *Reservation) OK() bool { return r.d.Allowed }

// Decision returns the store's decision. When the reservation is not OK, its RetryAfter is
// how long until the same request would be granted, or algo.Never.
func (r *Reservation) Decision() Decision { return r.d }

// Delay returns how long from now, on the limiter's clock, until the permits may be used:
// 0 once that time has come. It returns algo.Never when the reservation is not OK, as
// golang.org/x/time/rate returns InfDuration.
func (r *Reservation) Delay() time.Duration {
	if !r.d.Allowed {
		return algo.Never
	}
	return max(0, r.readyAt.Sub(r.clock.Now()))
}

// Wait sleeps on the limiter's clock until the permits may be used. It returns ctx.Err() if
// ctx ends first, keeping the reservation: call Cancel to give the permits back. Waiting on
// a reservation that is not OK returns, at once, an error wrapping ErrExceedsLimit when the
// request can never be granted and ErrInvalidRequest otherwise.
func (r *Reservation) Wait(ctx context.Context) error {
	if !r.d.Allowed {
		if r.d.RetryAfter == algo.Never {
			return exceeds(r.key, r.n, r.d.Limit)
		}
		return fmt.Errorf("%w: key %q: waiting on a reservation that was not granted", ErrInvalidRequest, r.key)
	}
	return r.clock.Sleep(ctx, r.Delay())
}

// Cancel gives the permits back to the store, as far as the algorithm allows, so that later
// requests may use them: a window that has passed is not reopened, and the buckets give back
// what golang.org/x/time/rate's CancelAt does (the permits minus those reserved after this
// one). It does so only while the permits are not yet usable (Delay > 0); from then on they
// count as used. Cancel is idempotent, and does nothing for a reservation that is not OK or
// that FailOpen granted. It returns the store's error if the refund failed. A done ctx does
// not stop it, so "if err := r.Wait(ctx); err != nil { r.Cancel(ctx) }" gives the permits
// back. docs/algorithms.md ("Conventions", Refund) explains the rule.
func (r *Reservation) Cancel(ctx context.Context) error {
	if r.lim == nil || !r.clock.Now().Before(r.readyAt) || r.done.Swap(true) {
		return nil
	}
	return r.giveBack(cleanupCtx(ctx), r.lim.timeout)
}

// abandon gives the permits back for a caller that gave up waiting for them and gets an
// error instead: even when their time has come (Cancel would count them as used), and on a
// context detached from ctx, bounded by the limiter's timeout (detachedWithin).
func (r *Reservation) abandon(ctx context.Context) error {
	if r.lim == nil || r.done.Swap(true) {
		return nil
	}
	return r.giveBack(context.WithoutCancel(ctx), detachedWithin(r.lim.timeout))
}

// giveBack refunds what the reservation holds: a single grant within timeout, a
// composite's grants each within its own limiter's bound (refundGrants).
func (r *Reservation) giveBack(ctx context.Context, timeout time.Duration) error {
	if r.parts != nil {
		return refundGrants(ctx, r.parts)
	}
	return r.lim.refundWithin(ctx, r.key, r.alg, r.n, r.d.At, timeout)
}
