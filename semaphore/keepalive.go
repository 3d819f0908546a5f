package semaphore

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// keeper is the state of one KeepAlive goroutine.
type keeper struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the goroutine has returned
	ch     chan error    // the reason it stopped, then closed
}

// KeepAlive renews the lease every LeaseTTL/3, on the semaphore's clock, in a goroutine
// that runs until Release, until ctx ends, or until the lease is lost; a failed renewal is
// retried LeaseTTL/6 later. The returned channel receives one value, why it stopped, and is
// then closed: nil after Release, ctx.Err() when ctx ended, or an error wrapping
// ErrLeaseExpired when a renewal found the lease gone or store failures kept it from
// renewing before the lease's Deadline (reported at the Deadline, not later). The holder
// should then stop its work.
//
// At most one keep-alive runs per lease: while one runs, later calls return its channel;
// once it has stopped, a new call starts another. After Release has begun, KeepAlive starts
// nothing and returns a channel holding nil.
func (l *Lease) KeepAlive(ctx context.Context) <-chan error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.keep != nil {
		select {
		case <-l.keep.done: // stopped: start another
		default:
			return l.keep.ch
		}
	}
	if l.closing {
		ch := make(chan error, 1)
		ch <- nil
		close(ch)
		return ch
	}
	kctx, cancel := context.WithCancel(ctx)
	k := &keeper{cancel: cancel, done: make(chan struct{}), ch: make(chan error, 1)}
	l.keep = k
	go l.keepAlive(ctx, kctx, k)
	return k.ch
}

// keepAlive is the KeepAlive goroutine; ctx is the caller's context, kctx its own, which
// Release cancels. It marks itself done before it sends its outcome, so a caller that has
// received from the channel and calls KeepAlive again always starts a new keep-alive.
func (l *Lease) keepAlive(ctx, kctx context.Context, k *keeper) {
	err := l.renewUntilStopped(ctx, kctx)
	k.cancel()
	close(k.done)
	k.ch <- err // buffered: never blocks
	close(k.ch)
}

// renewUntilStopped renews the lease every LeaseTTL/3 until kctx ends or the lease is
// lost, and returns what KeepAlive's channel reports. It never renews past the Deadline
// and never sleeps past it: a lease not renewed by then is reported lost then.
func (l *Lease) renewUntilStopped(ctx, kctx context.Context) error {
	ttl := l.sem.cfg.LeaseTTL
	var failed error // the last renewal's store error, if it failed
	for {
		left := l.timeLeft()
		if left > 0 {
			wait := ttl / 3
			if failed != nil {
				wait = ttl / 6
			}
			if l.sem.clock.Sleep(kctx, min(wait, left)) != nil {
				return ctx.Err() // nil when Release stopped it
			}
			left = l.timeLeft()
		}
		if left <= 0 {
			return l.lost(failed)
		}
		err := l.Renew(kctx)
		switch {
		case err == nil:
			failed = nil
		case kctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, ErrLeaseExpired):
			return err
		default:
			failed = err // the store failed: the lease holds until the Deadline
		}
	}
}

// lost is KeepAlive's error for a lease not renewed by its Deadline; failed is the last
// renewal's store error.
func (l *Lease) lost(failed error) error {
	l.mu.Lock()
	renewed, deadline := l.renewed, l.deadlineLocked()
	l.mu.Unlock()
	err := fmt.Errorf("%w: semaphore %q: not renewed by its deadline %v (%v after the last renewal was sent)",
		ErrLeaseExpired, l.name, deadline.Format(time.RFC3339Nano), deadline.Sub(renewed))
	if failed != nil {
		err = fmt.Errorf("%w: %w", err, failed)
	}
	return err
}

// stopKeepAlive stops the KeepAlive goroutine, if any, and waits until it has returned.
func (l *Lease) stopKeepAlive() {
	l.mu.Lock()
	l.closing = true
	k := l.keep
	l.mu.Unlock()
	if k != nil {
		k.cancel()
		<-k.done
	}
}
