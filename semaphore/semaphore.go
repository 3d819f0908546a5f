package semaphore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/nilcheck"
	"github.com/ratekit/limiter/internal/storeclock"
	"github.com/ratekit/limiter/store"
)

// ErrLeaseExpired reports a lease that is no longer held: it expired (LeaseTTL passed
// without a renewal, or the store lost it, as a Redis restarted without persistence does)
// or it was released. Lease.Release returns it when the lease had already expired, which
// changes nothing; Lease.Renew and KeepAlive return it when the lease cannot be extended,
// and the holder should then stop the work the permit was protecting.
var ErrLeaseExpired = errors.New("semaphore: lease expired")

const (
	// minLeaseMargin is the least safety margin of a lease's Deadline (see leaseMargin).
	minLeaseMargin = 5 * time.Millisecond

	firstPoll      = time.Millisecond // the first wait of a blocked Acquire; it doubles from there
	minQueueTTL    = 2 * time.Second  // the least time a fair waiter's place outlives its last attempt
	cleanupTimeout = time.Second      // bounds the calls that leave a queue after a failure
)

// Semaphore limits how many holders work at once under each name, with its state in a
// store.SemaphoreStore. Create it with [New]; the zero value is not usable. It is safe for
// concurrent use, and one Semaphore serves any number of names, each an independent
// semaphore with the same config. A holder gets a [Lease].
type Semaphore struct {
	st       store.SemaphoreStore
	cfg      algo.Semaphore
	clock    clockx.Clock
	maxPoll  time.Duration
	queueTTL time.Duration
}

// New returns a Semaphore with cfg on s. It returns an error wrapping
// algo.ErrInvalidConfig, naming the cause, when s is nil (also a typed nil such as a nil
// *local.Store), cfg is invalid (see algo.Semaphore.Validate) or an option is. Nil options
// are skipped.
func New(s store.SemaphoreStore, cfg algo.Semaphore, opts ...Option) (*Semaphore, error) {
	if nilcheck.Nil(s) {
		return nil, fmt.Errorf("%w: semaphore.New: store is nil", algo.ErrInvalidConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := options{clock: storeclock.Of(s), maxPoll: defaultPoll}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	if o.clockNil {
		return nil, fmt.Errorf("%w: semaphore.WithClock: the clock is nil", algo.ErrInvalidConfig)
	}
	if o.maxPoll <= 0 {
		return nil, fmt.Errorf("%w: semaphore.WithPoll: the cap must be > 0, got %v", algo.ErrInvalidConfig, o.maxPoll)
	}
	return &Semaphore{
		st: s, cfg: cfg, clock: o.clock, maxPoll: o.maxPoll,
		queueTTL: max(minQueueTTL, 10*o.maxPoll),
	}, nil
}

// Acquire blocks until it holds a permit of the semaphore name, or ctx ends. While denied it
// sleeps on the semaphore's clock and tries again, 1 ms at first, doubling up to the
// [WithPoll] cap, never past the earliest lease's expiry. It returns ctx.Err() when ctx ends
// first (having given up its place in a fair queue), and a store error (wrapping
// store.ErrUnavailable, for example) at once: it does not retry a failing store. A ctx
// already done returns its error without trying.
func (s *Semaphore) Acquire(ctx context.Context, name string) (*Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	token := newToken()
	delay := min(firstPoll, s.maxPoll)
	for {
		start := s.clock.Now()
		r, err := s.st.Acquire(ctx, name, s.cfg, token, s.queueTTL)
		if err != nil {
			s.abandon(ctx, name, token, err)
			return nil, err
		}
		if r.Acquired {
			return s.newLease(name, token, start), nil
		}
		wait := delay
		if r.RetryAfter > 0 && r.RetryAfter < wait {
			wait = r.RetryAfter // a lease expires then: a permit comes free unless renewed
		}
		if err := s.clock.Sleep(ctx, wait); err != nil {
			if s.cfg.Fair {
				s.abandon(ctx, name, token, nil) // give up the place in the queue
			}
			return nil, err
		}
		delay = min(2*delay, s.maxPoll)
	}
}

// TryAcquire tries once, without waiting, to take a permit of the semaphore name. It
// returns the lease and true when granted; false (and no error) when no permit is free
// or, in fair mode, when waiters are queued ahead for the free permits: a try never
// overtakes a waiter and never queues. Errors are those of Acquire.
func (s *Semaphore) TryAcquire(ctx context.Context, name string) (*Lease, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	token := newToken()
	start := s.clock.Now()
	r, err := s.st.Acquire(ctx, name, s.cfg, token, 0)
	if err != nil {
		s.abandon(ctx, name, token, err)
		return nil, false, err
	}
	if !r.Acquired {
		return nil, false, nil
	}
	return s.newLease(name, token, start), true, nil
}

// abandon removes token from name, after a failed call (err != nil: the store may have
// granted it before failing, for example a reply lost to a timeout) or to leave a fair
// queue. It uses a context that survives ctx's cancellation, bounded by cleanupTimeout.
// Calls that failed validation never reached the store and need nothing.
func (s *Semaphore) abandon(ctx context.Context, name, token string, err error) {
	if err != nil && (errors.Is(err, algo.ErrInvalidConfig) || errors.Is(err, algo.ErrInvalidRequest) ||
		errors.Is(err, store.ErrInvalidKey) || errors.Is(err, store.ErrClosed)) {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, _ = s.st.Release(cctx, name, token) // if this fails too, the lease or place expires
}

// newToken returns 128 random bits in hex. crypto/rand.Read never fails: since Go 1.24 it
// aborts the program rather than return an error.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
