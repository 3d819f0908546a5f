package limiter

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/ctxutil"
)

// Reservation is a grant of permits that may only be used after a delay. Get one with
// Reserve; sleep with Wait (or Delay and a timer of your own), or give the permits back with
// Cancel. A Reservation is safe for concurrent use.
type Reservation struct {
	lim     *Limiter // the limiter (or rule set) that holds the grant; nil when nothing is held
	clock   clockx.Clock
	key     string
	alg     algo.Algorithm
	n       int64
	d       Decision
	readyAt time.Time   // on the facade's clock: when the permits may be used
	done    atomic.Bool // Cancel has run
	parts   []grant     // a rule set's grants, one per rule that holds one (ruleset.go)
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
	var o outcome
	d, err := l.decide(ctx, key, request{N: n, MaxWait: max(maxWait, 0)}, &o)
	switch {
	case o.refused:
		return l.reservation(n, Decision{}, &o), err
	case err != nil:
		return nil, err
	}
	return l.reservation(n, d, &o), o.soft
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
	return r.giveBack(ctxutil.Cleanup(ctx), r.lim.timeout) // a cancelled caller still gives back what it held
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

// giveBack refunds what the reservation holds: one rule's grant within timeout, a rule
// set's grants each within its own limiter's bound (refundGrants).
func (r *Reservation) giveBack(ctx context.Context, timeout time.Duration) error {
	if r.parts != nil {
		return refundGrants(ctx, r.parts)
	}
	return r.lim.refundWithin(ctx, r.key, r.alg, r.n, r.d.At, timeout)
}
