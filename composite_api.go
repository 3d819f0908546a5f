package limiter

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
)

// The composite's side of Limiter.AllowN, Reserve, WaitN and TryAcquire, which check n and
// hand composites over. Keys are passed as given: each rule applies its own key function.

func (c *composite) allowN(ctx context.Context, key string, n int64) (Decision, error) {
	o := c.decide(ctx, key, algo.Request{N: n})
	if o.hard != nil {
		return Decision{}, o.hard
	}
	return o.d, o.soft
}

func (c *composite) reserve(ctx context.Context, key string, n int64, maxWait time.Duration) (*Reservation, error) {
	o := c.decide(ctx, key, algo.Request{N: n, MaxWait: maxWait})
	if o.hard != nil {
		if errors.Is(o.hard, store.ErrUnavailable) {
			// FailClosed: a Reservation that is not OK, as Limiter.Reserve returns.
			return &Reservation{clock: c.clock, key: key, n: n, readyAt: c.clock.Now()}, o.hard
		}
		return nil, o.hard
	}
	return c.newReservation(key, n, o), o.soft
}

// newReservation records a composite outcome, timing it on the composite's clock.
func (c *composite) newReservation(key string, n int64, o outcome) *Reservation {
	r := &Reservation{clock: c.clock, key: key, n: n, d: o.d, readyAt: c.clock.Now()}
	if o.d.Allowed {
		r.readyAt = r.readyAt.Add(o.d.Wait)
		if len(o.grants) > 0 {
			r.lim, r.parts = c.self, o.grants
		}
	}
	return r
}

func (c *composite) waitN(ctx context.Context, key string, n int64) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		maxWait := algo.Forever
		deadline, hasDeadline := ctx.Deadline()
		if hasDeadline {
			// A context deadline is real time, whatever clock the composite sleeps on.
			maxWait = max(0, time.Until(deadline))
		}
		o := c.decide(ctx, key, algo.Request{N: n, MaxWait: maxWait})
		switch {
		case o.hard != nil:
			return o.hard
		case o.d.Allowed:
			return c.self.sleep(ctx, c.newReservation(key, n, o))
		case o.d.RetryAfter == algo.Never:
			return exceeds(key, n, o.d.Limit)
		case hasDeadline:
			return fmt.Errorf("%w: key %q: n=%d cannot be granted within %v (retry after %v)",
				ErrWouldExceedDeadline, key, n, maxWait, o.d.RetryAfter)
		}
		if err := c.clock.Sleep(ctx, max(o.d.RetryAfter, time.Microsecond)); err != nil {
			return err
		}
	}
}

func (c *composite) tryAcquire(ctx context.Context, key string, n int64, timeout time.Duration) (bool, error) {
	maxWait := max(timeout, 0)
	if deadline, ok := ctx.Deadline(); ok {
		maxWait = min(maxWait, max(0, time.Until(deadline)))
	}
	o := c.decide(ctx, key, algo.Request{N: n, MaxWait: maxWait})
	switch {
	case o.hard != nil:
		return false, o.hard
	case o.d.Allowed:
		if err := c.self.sleep(ctx, c.newReservation(key, n, o)); err != nil {
			return false, err
		}
		return true, nil
	case o.d.RetryAfter == algo.Never:
		return false, exceeds(key, n, o.d.Limit)
	default:
		return false, nil
	}
}
