package smooth

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/waiterr"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

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
// store.Store. Create it with New; the zero value is not usable. It is
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

// New returns a Guava-style limiter for c, which is an algo.SmoothBursty (Guava's
// RateLimiter.create(rate): it saves up MaxBurstSeconds, by default one second, of unused
// rate as permits taken without waiting) or an algo.SmoothWarmingUp (RateLimiter.create(rate,
// warmup): it starts cold, slower by up to ColdFactor, by default 3, and speeds up to its
// rate over Warmup of saturated use). The limiter starts with no stored permits, now (on the
// store's clock).
//
// Options: WithClock, WithStore. The error wraps algo.ErrInvalidConfig (or
// store.ErrInvalidKey) for another algorithm, a config that does not validate, or a bad
// option.
func New(c algo.Algorithm, opts ...Option) (*Limiter, error) {
	var rate float64
	switch s := c.(type) {
	case algo.SmoothBursty:
		rate = s.Rate
	case algo.SmoothWarmingUp:
		rate = s.Rate
	default:
		return nil, fmt.Errorf("%w: smooth.New: %v is not an algo.SmoothBursty or an algo.SmoothWarmingUp",
			algo.ErrInvalidConfig, c)
	}
	o, err := collect(opts)
	if err != nil {
		return nil, err
	}
	return newLimiter(c, rate, o)
}

func newLimiter(a algo.Algorithm, rate float64, o options) (*Limiter, error) {
	if err := a.Validate(); err != nil {
		return nil, err
	}
	st, key := o.store, o.key
	if !o.storeSet {
		// One key, never forgotten: no sweeper needed (and no goroutine to stop).
		ls, err := local.New(local.WithClock(o.clock), local.WithSweepInterval(0))
		if err != nil {
			return nil, err
		}
		st, key = ls, defaultKey
	}
	l := &Limiter{st: st, key: key, opt: o, alg: a, rate: rate}
	// Start the limiter's state now, as Guava does at construction. Best effort: if the
	// store cannot be reached, the state starts at the first acquire instead.
	_, _ = l.st.Apply(context.Background(), l.key, a, syncRequest)
	return l, nil
}

// Acquire takes n permits, sleeping until they may be used, and returns the time slept
// (Guava's acquire(n)). Like Guava it never fails for lack of permits: it reserves at once
// and waits for the permits reserved before it.
//
// When ctx has a deadline (real time, whatever clock the limiter sleeps on) and the permits
// would come after it, Acquire returns at once, reserving nothing, the error limiter.WaitN
// returns then: it wraps limiter.ErrWouldExceedDeadline and matches
// context.DeadlineExceeded with errors.Is, as golang.org/x/time/rate's Wait does. If ctx is
// done before the reservation, nothing is taken; if it ends during the sleep, Acquire asks
// the store to give the permits back (Guava's algorithms keep them taken) and returns the
// time slept, on the limiter's clock, with ctx.Err().
//
// n must be in [1, 2^53] (an error wrapping algo.ErrInvalidRequest otherwise); a wait of
// 31.7 years (algo.MaxMicros) or more, which only rates below about 1e-8 per second reach,
// returns at once, reserving nothing, an error wrapping limiter.ErrExceedsLimit, as
// limiter.WaitN does (Guava would block that long); a store failure is returned as is.
func (l *Limiter) Acquire(ctx context.Context, n int64) (time.Duration, error) {
	maxWait, hasDeadline := untilDeadline(ctx, algo.Forever)
	g, err := l.reserve(ctx, n, maxWait)
	if err != nil {
		return 0, err
	}
	switch {
	case g.d.Allowed:
		return l.sleep(ctx, g)
	case hasDeadline && g.d.RetryAfter != algo.Never:
		return 0, fmt.Errorf("%w: n=%d would wait %v, the deadline is in %v",
			waiterr.ErrWouldExceedDeadline, n, maxWait+g.d.RetryAfter, maxWait)
	default: // a wait of 31.7 years or more: the only denial without a deadline
		return 0, fmt.Errorf("%w: n=%d would wait 31.7 years or more", waiterr.ErrExceedsLimit, n)
	}
}

// TryAcquire takes n permits if they can be used within timeout, sleeping until then, and
// reports whether it did (Guava's tryAcquire(n, timeout)). A timeout ≤ 0 grants only
// permits usable now. When the permits would come later than timeout, or later than ctx's
// deadline, it returns false at once, without reserving or waiting, as
// limiter.TryAcquire does; the deadline is real time whatever clock the limiter sleeps on
// (see Acquire). If ctx ends during the sleep, the permits are given back as far as the
// algorithm allows (for Guava's, not at all: see Acquire) and it returns false and
// ctx.Err().
func (l *Limiter) TryAcquire(ctx context.Context, n int64, timeout time.Duration) (bool, error) {
	maxWait, _ := untilDeadline(ctx, max(timeout, 0))
	g, err := l.reserve(ctx, n, maxWait)
	if err != nil || !g.d.Allowed {
		return false, err
	}
	if _, err := l.sleep(ctx, g); err != nil {
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

// grant is a reservation made in the store: what a cancelled sleep gives back.
type grant struct {
	alg algo.Algorithm
	n   int64
	d   algo.Decision
}

// untilDeadline bounds maxWait by the time left until ctx's deadline, if it has one. A
// context deadline is real time, whatever clock the limiter sleeps on.
func untilDeadline(ctx context.Context, maxWait time.Duration) (time.Duration, bool) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return maxWait, false
	}
	return min(maxWait, max(0, time.Until(deadline))), true
}

// reserve asks the store for n permits with the given timeout, under the read lock so that
// SetRate cannot change the rate between reading it and reserving with it.
func (l *Limiter) reserve(ctx context.Context, n int64, maxWait time.Duration) (grant, error) {
	if n <= 0 || n > maxPermits {
		return grant{}, fmt.Errorf("%w: smooth: n must be in [1, 2^53], got %d", algo.ErrInvalidRequest, n)
	}
	if err := ctx.Err(); err != nil {
		return grant{}, err
	}
	l.mu.RLock()
	defer l.mu.RUnlock()
	d, err := l.st.Apply(ctx, l.key, l.alg, algo.Request{N: n, MaxWait: maxWait})
	return grant{alg: l.alg, n: n, d: d}, err
}

// sleep waits for g on the limiter's clock, with no lock held, and returns the time slept.
// If ctx ends first it refunds g and returns the time slept until then, by the same clock.
func (l *Limiter) sleep(ctx context.Context, g grant) (time.Duration, error) {
	if g.d.Wait <= 0 {
		return 0, nil
	}
	start := l.opt.clock.Now()
	err := l.opt.clock.Sleep(ctx, g.d.Wait)
	if err == nil {
		return g.d.Wait, nil
	}
	slept := min(max(l.opt.clock.Now().Sub(start), 0), g.d.Wait)
	// ctx is done, but the refund must still reach the store. The caller's error is its
	// context's: a failed refund is not reported (there is nothing the caller could do).
	_ = l.st.Refund(context.WithoutCancel(ctx), l.key, g.alg, g.n, g.d.At)
	return slept, err
}
