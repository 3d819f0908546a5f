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
	clock   clockx.Clock
	key     string
	n       int64
	d       Decision
	readyAt time.Time   // on the facade's clock: when the permits may be used
	done    atomic.Bool // Cancel has run
	held    []grant     // what the rules that granted hold (none: nothing to give back)
}

// OK reports whether the permits were granted.
func (r *Reservation) OK() bool { return r.d.Allowed }

// Decision returns the decision; when not OK, its RetryAfter is when the same request
// would be granted, or algo.Never.
func (r *Reservation) Decision() Decision { return r.d }

// Delay returns how long from now, on the limiter's clock, until the permits may be used
// (0 once they may), or algo.Never when not OK, as golang.org/x/time/rate does.
func (r *Reservation) Delay() time.Duration {
	if !r.d.Allowed {
		return algo.Never
	}
	return max(0, r.readyAt.Sub(r.clock.Now()))
}

// Wait sleeps on the limiter's clock until the permits may be used. It returns ctx.Err()
// if ctx ends first, keeping the permits (Cancel gives them back), and at once, when not
// OK, ErrExceedsLimit (never grantable) or algo.ErrInvalidRequest.
func (r *Reservation) Wait(ctx context.Context) error {
	if !r.d.Allowed {
		if r.d.RetryAfter == algo.Never {
			return exceeds(r.key, r.n, r.d.Limit)
		}
		return fmt.Errorf("%w: key %q: waiting on a reservation that was not granted", algo.ErrInvalidRequest, r.key)
	}
	return r.clock.Sleep(ctx, r.Delay())
}

// Cancel gives the permits back while they are not yet usable (Delay > 0), as far as the
// algorithm allows (as golang.org/x/time/rate's CancelAt; docs/algorithms.md, Refund). It is
// idempotent, does nothing for a Reservation that is not OK or holds nothing, returns the
// store's error, and still reaches the store when ctx is done.
func (r *Reservation) Cancel(ctx context.Context) error {
	if len(r.held) == 0 || !r.clock.Now().Before(r.readyAt) || r.done.Swap(true) {
		return nil
	}
	return giveBack(ctx, r.held, false)
}

// abandon gives the permits back for a caller that gave up waiting for them and gets an
// error instead: even when their time has come (Cancel would count them as used), each
// refund bounded by detachedWithin.
func (r *Reservation) abandon(ctx context.Context) error {
	if len(r.held) == 0 || r.done.Swap(true) {
		return nil
	}
	return giveBack(ctx, r.held, true)
}
