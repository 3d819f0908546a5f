package smooth

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// ErrWaitTooLong is returned by Acquire when the permits would not be available for about
// 31.7 years (algo.MaxMicros) or more, which only rates below about 1e-8 per second reach.
// Guava would block that long; nothing is reserved.
var ErrWaitTooLong = errors.New("smooth: the wait for the permits is too long (31.7 years or more)")

// maxPermits is the largest n of one call: counts above 2^53 are not exact in Redis.
const maxPermits int64 = 1 << 53

// syncRequest asks for more permits than can ever be granted, so that the store only brings
// the key up to date with the limiter's config at the store's now: it creates the key of a
// new limiter (Guava's limiters start at construction) and applies SetRate at the instant it
// is called (Guava's setRate resyncs then). See algo.SmoothBursty.
var syncRequest = algo.Request{N: maxPermits + 1}

// defaultKey names the state in a limiter's private store.
const defaultKey = "smooth"

// Limiter is a Guava-style rate limiter (SmoothBursty or SmoothWarmingUp) over a
// store.Store. Create it with NewBursty or NewWarmingUp; the zero value is not usable. It is
// safe for concurrent use: each call reserves its permits atomically in the store (the
// local store under a mutex, Redis in one script), then sleeps on the clock with no lock
// held, so a sleeping caller never delays another's reservation.
type Limiter struct {
	st  store.Store
	key string
	opt options

	mu   sync.RWMutex   // guards alg and rate: read-held while reserving, write-held by SetRate
	alg  algo.Algorithm // algo.SmoothBursty or algo.SmoothWarmingUp
	rate float64
}

// NewBursty returns a limiter that hands out rate permits per second, saving up the unused
// rate of up to one second (WithMaxBurstSeconds) as permits taken without waiting: Guava's
// RateLimiter.create(rate). rate may be +Inf (every acquire is free); otherwise it must be
// in [1e-15, 1e15]. The limiter starts with no stored permits, now (on the store's clock).
//
// Options: WithClock, WithMaxBurstSeconds, WithStore. The error wraps
// algo.ErrInvalidConfig (or store.ErrInvalidKey) for a bad rate or option.
func NewBursty(rate float64, opts ...Option) (*Limiter, error) {
	o, err := collect(opts, false)
	if err != nil {
		return nil, err
	}
	return newLimiter(algo.SmoothBursty{Rate: rate, MaxBurstSeconds: o.maxBurst}, rate, o)
}

// NewWarmingUp returns a limiter that hands out rate permits per second once warm, and
// starts cold: after being unused it is slower (up to 3 times, WithColdFactor) and speeds
// up to rate over warmup of saturated use: Guava's RateLimiter.create(rate, warmup). rate
// may be +Inf; otherwise it must be in [1e-15, 1e15]; warmup must be ≥ 0 (truncated to µs).
//
// Options: WithClock, WithColdFactor, WithStore. The error wraps algo.ErrInvalidConfig (or
// store.ErrInvalidKey) for a bad argument or option.
func NewWarmingUp(rate float64, warmup time.Duration, opts ...Option) (*Limiter, error) {
	o, err := collect(opts, true)
	if err != nil {
		return nil, err
	}
	return newLimiter(algo.SmoothWarmingUp{Rate: rate, Warmup: warmup, ColdFactor: o.coldFactor}, rate, o)
}

func newLimiter(a algo.Algorithm, rate float64, o options) (*Limiter, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	st, key := o.store, o.key
	if !o.storeSet {
		// One key, never forgotten: no sweeper needed (and no goroutine to stop).
		st, key = local.New(local.WithClock(o.clock), local.WithSweepInterval(0)), defaultKey
	}
	l := &Limiter{st: st, key: key, opt: o, alg: a, rate: rate}
	// Start the limiter's state now, as Guava does at construction. Best effort: if the
	// store cannot be reached, the state starts at the first acquire instead.
	_, _ = l.st.Apply(context.Background(), l.key, a, syncRequest)
	return l, nil
}

// Acquire takes n permits, sleeping until they may be used, and returns the time slept
// (Guava's acquire(n)). Like Guava it never fails for lack of permits: it reserves at once
// and waits for the permits reserved before it; the first acquire after idleness is free,
// and a large acquire makes the next caller wait.
//
// If ctx is done before the permits are reserved, nothing is taken; if it ends during the
// sleep, Acquire returns ctx.Err() and the permits stay taken: Guava's model cannot give
// them back, because later callers have already been scheduled after them. n must be in
// [1, 2^53] (an error wrapping algo.ErrInvalidRequest otherwise); a store failure is
// returned as is.
func (l *Limiter) Acquire(ctx context.Context, n int64) (time.Duration, error) {
	d, err := l.reserve(ctx, n, algo.Forever)
	if err != nil {
		return 0, err
	}
	if !d.Allowed {
		return 0, ErrWaitTooLong
	}
	if err := l.sleep(ctx, d.Wait); err != nil {
		return 0, err
	}
	return d.Wait, nil
}

// TryAcquire takes n permits if they can be used within timeout, sleeping until then, and
// reports whether it did (Guava's tryAcquire(n, timeout)). A timeout ≤ 0 grants only
// permits usable now; when the permits are not usable within timeout it returns false at
// once, without reserving or waiting. If ctx ends during the sleep it returns false and
// ctx.Err(), and the permits stay taken (see Acquire).
func (l *Limiter) TryAcquire(ctx context.Context, n int64, timeout time.Duration) (bool, error) {
	d, err := l.reserve(ctx, n, max(timeout, 0))
	if err != nil || !d.Allowed {
		return false, err
	}
	if err := l.sleep(ctx, d.Wait); err != nil {
		return false, err
	}
	return true, nil
}

// SetRate changes the stable rate, as Guava's setRate: the state is first brought up to
// date at the old rate, and stored permits keep their proportion of the maximum. Callers
// already sleeping are not woken; the next reservation still pays for the previous one at
// the rate it was made at. r must be +Inf or in [1e-15, 1e15] (an error wrapping
// algo.ErrInvalidConfig otherwise, and the rate is unchanged).
//
// The change is applied to the store at once; if the store cannot be reached, the new rate
// is still in effect and is applied by the next acquire, and the store's error is returned.
// Limiters of other processes sharing the key must be given the same rate: a reservation
// made with a different rate changes the key back.
func (l *Limiter) SetRate(r float64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var a algo.Algorithm
	switch c := l.alg.(type) {
	case algo.SmoothBursty:
		c.Rate = r
		a = c
	case algo.SmoothWarmingUp:
		c.Rate = r
		a = c
	}
	if err := a.Validate(); err != nil {
		return err
	}
	l.alg, l.rate = a, r
	if _, err := l.st.Apply(context.Background(), l.key, a, syncRequest); err != nil {
		return fmt.Errorf("smooth: SetRate(%v): the store will get the new rate at the next acquire: %w", r, err)
	}
	return nil
}

// Rate returns the stable rate in permits per second: the one given to the constructor or
// to the last successful SetRate.
func (l *Limiter) Rate() float64 {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.rate
}

// reserve asks the store for n permits with the given timeout, under the read lock so that
// SetRate cannot change the rate between reading it and reserving with it.
func (l *Limiter) reserve(ctx context.Context, n int64, maxWait time.Duration) (algo.Decision, error) {
	if n <= 0 || n > maxPermits {
		return algo.Decision{}, fmt.Errorf("%w: smooth: n must be in [1, 2^53], got %d", algo.ErrInvalidRequest, n)
	}
	if err := ctx.Err(); err != nil {
		return algo.Decision{}, err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.st.Apply(ctx, l.key, l.alg, algo.Request{N: n, MaxWait: maxWait})
}

// sleep waits d on the limiter's clock, with no lock held.
func (l *Limiter) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	return l.opt.clock.Sleep(ctx, d)
}
