package semaphore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ratekit/limiter/internal/ctxutil"
)

// Lease is one permit of a Semaphore, held until Release or until its lease expires
// (LeaseTTL after it was granted or last renewed, on the store's clock). Its methods are
// safe for concurrent use.
type Lease struct {
	sem   *Semaphore
	name  string
	token string

	op       sync.Mutex // serialises the store calls of Release and Renew
	released bool       // Release reached the store; under op
	relErr   error      // what Release returned then; under op

	mu      sync.Mutex // guards renewed, closing and keep; never held across a store call
	renewed time.Time  // on the semaphore's clock, when the last confirmed grant or renewal was sent
	closing bool       // Release has begun: KeepAlive starts nothing more
	keep    *keeper
}

// Token returns the lease's owner token, for logs.
func (l *Lease) Token() string { return l.token }

// Deadline returns the instant, on the semaphore's clock, until which the lease is
// certainly held: the moment the last grant or renewal the store confirmed was sent, plus
// LeaseTTL, minus a safety margin of LeaseTTL/10 (at least 5 ms, at most LeaseTTL/2).
// Counting from when the request was sent, not from when its reply arrived, keeps the
// deadline safe: the store applied it at some moment in between, so its lease lasts at
// least that long; the margin covers clock drift between holder and store and the time it
// takes to act. Past the deadline another holder may have the permit, so work that must
// not overlap should stop by then; KeepAlive reports the lease lost at the deadline at
// the latest. Release does not change it.
func (l *Lease) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadlineLocked()
}

// deadlineLocked is Deadline with l.mu held.
func (l *Lease) deadlineLocked() time.Time {
	ttl := l.sem.cfg.LeaseTTL
	return l.renewed.Add(ttl - leaseMargin(ttl))
}

// timeLeft returns how long until Deadline, on the semaphore's clock (≤ 0 once past).
func (l *Lease) timeLeft() time.Duration {
	return l.Deadline().Sub(l.sem.clock.Now())
}

// Release gives the permit back, stopping KeepAlive first. It is idempotent: once it has
// reached the store, later calls return the same result without calling it again. When
// the lease had already expired (so another holder may have taken the permit) it changes
// nothing and returns an error wrapping ErrLeaseExpired. A store error is returned as is,
// and the lease is not marked released: Release may be called again (or the lease will
// expire). A done ctx does not stop it: the release still goes to the store (bounded by the
// store's timeout), so that "defer lease.Release(ctx)" frees the permit after a cancel.
func (l *Lease) Release(ctx context.Context) error {
	ctx = ctxutil.Cleanup(ctx)
	l.stopKeepAlive()
	l.op.Lock()
	defer l.op.Unlock()
	if l.released {
		return l.relErr
	}
	ok, err := l.sem.st.Release(ctx, l.name, l.token)
	if err != nil {
		return err
	}
	l.released = true
	if !ok {
		l.relErr = fmt.Errorf("%w: semaphore %q: the lease expired before Release", ErrLeaseExpired, l.name)
	}
	return l.relErr
}

// Renew extends the lease to LeaseTTL from now (on the store's clock), and on success moves
// Deadline to LeaseTTL minus the margin after the moment the request was sent. It fails with
// an error wrapping ErrLeaseExpired when the lease is no longer held, even if nobody took the
// permit in between (the holder should assume the limit may have been exceeded and stop),
// and after Release. A store error is returned as is; the lease may still be valid. Before
// Deadline, the store call is also bounded by the time left until it.
func (l *Lease) Renew(ctx context.Context) error {
	l.op.Lock()
	defer l.op.Unlock()
	if l.released {
		return fmt.Errorf("%w: semaphore %q: the lease was released", ErrLeaseExpired, l.name)
	}
	start := l.sem.clock.Now()
	if left := l.Deadline().Sub(start); left > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, left) // in real time: the clocks agree outside tests
		defer cancel()
	}
	ok, err := l.sem.st.Renew(ctx, l.name, l.sem.cfg, l.token)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: semaphore %q: the lease expired before Renew", ErrLeaseExpired, l.name)
	}
	l.mu.Lock()
	if start.After(l.renewed) {
		l.renewed = start
	}
	l.mu.Unlock()
	return nil
}

func (s *Semaphore) newLease(name, token string, at time.Time) *Lease {
	return &Lease{sem: s, name: name, token: token, renewed: at}
}

// leaseMargin is how long before LeaseTTL runs out, counted from when the last confirmed
// grant or renewal was sent, a holder must consider its lease lost: LeaseTTL/10, at least
// 5 ms, at most LeaseTTL/2. It absorbs the drift between the holder's clock and the
// store's and the time it takes to tell the holder; the store cannot expire the lease
// sooner, since it applied the renewal no earlier than it was sent.
func leaseMargin(ttl time.Duration) time.Duration {
	return min(max(ttl/10, minLeaseMargin), ttl/2)
}
