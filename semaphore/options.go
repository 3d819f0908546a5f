package semaphore

import (
	"time"

	"github.com/ratekit/limiter/clockx"
)

// defaultPoll is the longest wait between two attempts of a blocked Semaphore.Acquire,
// unless WithPoll sets another.
const defaultPoll = 100 * time.Millisecond

// Option configures a Semaphore made by New. A nil Option is ignored; an Option given a
// value it cannot use makes New return an error wrapping algo.ErrInvalidConfig.
type Option interface {
	apply(*options)
}

type options struct {
	clock    clockx.Clock
	clockNil bool // WithClock(nil)
	maxPoll  time.Duration
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithClock sets the clock a Semaphore sleeps on and reads Lease.Deadline on: between the
// attempts of Acquire, and between the renewals of KeepAlive. It does not decide when
// leases expire: the store does (local.WithClock, or the Redis server's TIME). The default
// is the store's clock when the store reports one (store.Clocked: *local.Store does, and
// *distributed.Store with WithClientClock), else clockx.Real(); a nil clock is an error
// (leave the option out for the default). KeepAlive needs a clock whose Sleep blocks
// (Real, or in tests one that blocks until moved), not a clockx.Fake.
func WithClock(c clockx.Clock) Option {
	return optionFunc(func(o *options) {
		if c == nil {
			o.clockNil = true
			return
		}
		o.clock = c
	})
}

// WithPoll sets the longest wait between two attempts of a blocked Acquire. The default is
// 100 ms; d must be > 0. A shorter cap notices released permits sooner and
// costs the store more calls per waiter.
func WithPoll(d time.Duration) Option {
	return optionFunc(func(o *options) { o.maxPoll = d })
}
