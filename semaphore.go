package limiter

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/store"
)

// ErrLeaseExpired reports a lease that is no longer held: it expired (LeaseTTL passed
// without a renewal, or the store lost it, as a Redis restarted without persistence does)
// or it was released. Lease.Release returns it when the lease had already expired, which
// changes nothing; Lease.Renew and KeepAlive return it when the lease cannot be extended,
// and the holder should then stop the work the permit was protecting.
var ErrLeaseExpired = errors.New("limiter: semaphore lease expired")

// DefaultSemaphorePoll is the longest wait between two attempts of a blocked
// Semaphore.Acquire, unless WithSemaphorePoll sets another.
const DefaultSemaphorePoll = 100 * time.Millisecond

const (
	// minLeaseMargin is the least safety margin of a lease's Deadline (see leaseMargin).
	minLeaseMargin = 5 * time.Millisecond

	firstPoll      = time.Millisecond // the first wait of a blocked Acquire; it doubles from there
	minQueueTTL    = 2 * time.Second  // the least time a fair waiter's place outlives its last attempt
	cleanupTimeout = time.Second      // bounds the calls that leave a queue after a failure
)

// Semaphore limits how many holders work at once under a name ("at most 5 concurrent
// exports", "at most 100 in-flight calls to the payment provider across the fleet"),
// with its state in a store.SemaphoreStore: in memory (package local) for one process, or
// in Redis (package distributed) for every process sharing it. Create it with
// [NewSemaphore]; it is safe for concurrent use, and one Semaphore serves any number of
// names, each an independent semaphore with the same config.
//
// A holder gets a [Lease], valid for LeaseTTL unless renewed ([Lease.Renew],
// [Lease.KeepAlive]) and ended by [Lease.Release]. A holder that crashes frees its permit
// when its lease expires, without any other process noticing. Each lease carries an owner
// token of 128 random bits: only its owner can renew or release it.
//
// # Blocking without hammering the store
//
// [Semaphore.Acquire] polls: it tries, and while denied sleeps on the semaphore's clock
// before trying again, 1 ms at first, doubling up to a cap (100 ms by default, see
// WithSemaphorePoll), and never past the moment the earliest lease expires, when a permit
// is sure to come free unless renewed. A blocked waiter therefore costs the store at most
// one call per cap interval. A release is noticed at the waiters' next poll, so a freed
// permit may stay idle for up to the cap; that latency is the price of the design.
// Notification by pub/sub was not chosen because it cannot replace polling: a crashed
// holder publishes nothing (only expiry frees its permit), and a message can be lost while
// a subscriber reconnects, so waiters would poll anyway; one mechanism is simpler to get
// right.
//
// In fair mode (algo.Semaphore.Fair) a waiter keeps its place in the store's queue between
// polls, for at least 2 s or ten times the cap; a waiter that disappears without giving up
// (a crashed process) holds up the waiters behind it for that long. A waiter whose
// context ends gives up its place at once.
type Semaphore struct {
	st       store.SemaphoreStore
	cfg      algo.Semaphore
	clock    clockx.Clock
	maxPoll  time.Duration
	queueTTL time.Duration
}

// SemaphoreOption configures a Semaphore.
type SemaphoreOption interface {
	applySemaphore(*semOptions)
}

type semOptions struct {
	clock   clockx.Clock
	maxPoll time.Duration
}

type semOptionFunc func(*semOptions)

func (f semOptionFunc) applySemaphore(o *semOptions) { f(o) }

// WithSemaphoreClock sets the clock a Semaphore sleeps on: between the attempts of
// Acquire, and between the renewals of KeepAlive. It does not decide when leases expire:
// the store does (local.WithClock, or the Redis server's TIME). The default is
// clockx.Real(); a nil clock keeps the default. KeepAlive needs a clock whose Sleep blocks
// (Real, or Mock in tests), not a clockx.Fake.
func WithSemaphoreClock(c clockx.Clock) SemaphoreOption {
	return semOptionFunc(func(o *semOptions) {
		if c != nil {
			o.clock = c
		}
	})
}

// WithSemaphorePoll sets the longest wait between two attempts of a blocked Acquire. The
// default is DefaultSemaphorePoll (100 ms); d must be > 0. A shorter cap notices released
// permits sooner and costs the store more calls per waiter.
func WithSemaphorePoll(d time.Duration) SemaphoreOption {
	return semOptionFunc(func(o *semOptions) { o.maxPoll = d })
}

// NewSemaphore returns a Semaphore with cfg on s. It returns an error wrapping
// ErrInvalidConfig, naming the cause, when s is nil, cfg is invalid (see
// algo.Semaphore.Validate) or an option is.
func NewSemaphore(s store.SemaphoreStore, cfg algo.Semaphore, opts ...SemaphoreOption) (*Semaphore, error) {
	if s == nil {
		return nil, fmt.Errorf("%w: NewSemaphore: store is nil", ErrInvalidConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o := semOptions{clock: clockx.Real(), maxPoll: DefaultSemaphorePoll}
	for _, opt := range opts {
		if opt != nil {
			opt.applySemaphore(&o)
		}
	}
	if o.maxPoll <= 0 {
		return nil, fmt.Errorf("%w: WithSemaphorePoll: the cap must be > 0, got %v", ErrInvalidConfig, o.maxPoll)
	}
	return &Semaphore{
		st: s, cfg: cfg, clock: o.clock, maxPoll: o.maxPoll,
		queueTTL: max(minQueueTTL, 10*o.maxPoll),
	}, nil
}

// Config returns the semaphore's configuration.
func (s *Semaphore) Config() algo.Semaphore { return s.cfg }

// Acquire blocks until it holds a permit of the semaphore name, or ctx ends. See the
// type's documentation for how it waits. It returns ctx.Err() when ctx ends first
// (having given up its place in a fair queue), and a store error (wrapping
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

// Holders returns how many leases of the semaphore name are live now, for observability.
func (s *Semaphore) Holders(ctx context.Context, name string) (int64, error) {
	return s.st.Holders(ctx, name)
}

// abandon removes token from name, after a failed call (err != nil: the store may have
// granted it before failing, for example a reply lost to a timeout) or to leave a fair
// queue. It uses a context that survives ctx's cancellation, bounded by cleanupTimeout.
// Calls that failed validation never reached the store and need nothing.
func (s *Semaphore) abandon(ctx context.Context, name, token string, err error) {
	if err != nil && (errors.Is(err, ErrInvalidConfig) || errors.Is(err, ErrInvalidRequest) ||
		errors.Is(err, store.ErrInvalidKey) || errors.Is(err, store.ErrClosed)) {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_, _ = s.st.Release(cctx, name, token) // if this fails too, the lease or place expires
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

// newToken returns 128 random bits in hex. crypto/rand.Read never fails: since Go 1.24 it
// aborts the program rather than return an error.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

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

// Name returns the name of the semaphore the lease belongs to.
func (l *Lease) Name() string { return l.name }

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
	ctx = cleanupCtx(ctx)
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

// Renew extends the lease to LeaseTTL from now (on the store's clock), and on success
// moves Deadline to LeaseTTL minus the margin after the moment the request was sent. It
// fails with an error wrapping ErrLeaseExpired when the lease is no longer held: once a
// lease has expired it is never renewed, even if nobody took the permit in between,
// because the store cannot tell whether another holder came and went, so the holder
// should assume that more than Permits may have worked at once and stop. It also fails
// so after Release. A store error is returned as is; the lease may still be valid.
//
// Before Deadline, the store call is bounded by the time left until it (on top of ctx
// and the store's own timeout): an answer that comes later could no longer be trusted
// to have arrived in time. Past Deadline it is bounded by ctx and the store alone, whose
// answer then tells whether the lease is still held.
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
