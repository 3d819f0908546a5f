package distributed

import (
	"context"
	"sync/atomic"
	"time"
)

// The deadline of a call to Redis is set in one place, Store.bound, once per call, when
// the call enters the transport (exec): the caller's context, bounded by the store's
// timeout (WithTimeout) unless its own deadline comes first. Everything after it honours
// that deadline and adds none of its own: a call sent alone runs under it; a batched
// call's caller waits under it, and the pipeline that carries the call runs until the
// latest deadline of its calls (see batcher.flush); the guard (bounded.go) makes a client
// that ignores deadlines return by it. A Limiter's own timeout (the root package's
// WithTimeout) reaches the store as the context's deadline, which bound keeps when it is
// the earlier.

// bound returns ctx bounded by the store's timeout from now (see above), and the function
// to call once the call is done (nil when there is nothing to release).
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if s.bounds == nil {
		return ctx, nil
	}
	return s.bounds.bound(ctx, time.Now())
}

// deadlines bounds each call by the store's timeout without what a context.WithTimeout
// per call costs (five allocations, about 380 bytes: the context, its timer, two closures
// and the Done channel), which was the largest part of a decision's garbage on the
// client. Calls that start within one grain (1/64 of the timeout) of each other share
// one deadline, its Done channel and its timer. A shared deadline is never later than a
// call's own (start + timeout): it is rounded down, so a call may get up to a grain less
// than the timeout, never more, and every bound the timeout promises still holds.
type deadlines struct {
	timeout time.Duration // > 0
	grain   time.Duration
	cur     atomic.Pointer[deadline] // the latest shared deadline
}

func newDeadlines(timeout time.Duration) *deadlines {
	return &deadlines{timeout: timeout, grain: timeout / 64}
}

// deadline is one shared deadline, and the context.Context of the calls made under it
// whose own context carries nothing (context.Background or context.TODO).
type deadline struct {
	at   time.Time
	done chan struct{} // closed at at, by a timer
}

func (d *deadline) Deadline() (time.Time, bool) { return d.at, true }
func (d *deadline) Done() <-chan struct{}       { return d.done }
func (d *deadline) Value(any) any               { return nil }

func (d *deadline) Err() error {
	select {
	case <-d.done:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// valuesCtx is a caller's context that is never cancelled (its Done is nil) but carries
// values (a trace span, say), bounded by a shared deadline: one small allocation.
type valuesCtx struct {
	context.Context // the caller's: Value
	d               *deadline
}

func (c *valuesCtx) Deadline() (time.Time, bool) { return c.d.Deadline() }
func (c *valuesCtx) Done() <-chan struct{}       { return c.d.Done() }
func (c *valuesCtx) Err() error                  { return c.d.Err() }

// at returns a shared deadline in (now + timeout - grain, now + timeout].
func (ds *deadlines) at(now time.Time) *deadline {
	want := now.Add(ds.timeout)
	if d := ds.cur.Load(); d != nil && !d.at.After(want) && want.Sub(d.at) < ds.grain {
		return d
	}
	// Two callers may get here together: each uses its own, the last one is shared.
	d := &deadline{at: want, done: make(chan struct{})}
	time.AfterFunc(time.Until(want), func() { close(d.done) })
	ds.cur.Store(d)
	return d
}

// bound returns ctx bounded by the timeout from now, and the function to call once the
// call is done (nil when there is nothing to release). ctx itself is returned when its
// own deadline comes first; a shared deadline, with no allocation, when ctx carries
// nothing; a context that adds a shared deadline to ctx's values when ctx is never
// cancelled; else context.WithDeadline.
func (ds *deadlines) bound(ctx context.Context, now time.Time) (context.Context, context.CancelFunc) {
	d := ds.at(now)
	if dl, ok := ctx.Deadline(); ok && !dl.After(d.at) {
		return ctx, nil
	}
	if ctx == context.Background() || ctx == context.TODO() {
		return d, nil
	}
	if ctx.Done() == nil {
		return &valuesCtx{ctx, d}, nil
	}
	return context.WithDeadline(ctx, d.at)
}
