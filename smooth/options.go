package smooth

import (
	"fmt"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/nilcheck"
	"github.com/ratekit/limiter/internal/storeclock"
	"github.com/ratekit/limiter/store"
)

// Option configures a Limiter made by New. A nil Option is ignored; an Option given a
// value it cannot use makes New return an error wrapping algo.ErrInvalidConfig.
type Option interface {
	apply(*options)
}

type options struct {
	clock    clockx.Clock
	clockNil bool // WithClock(nil)
	store    store.Store
	key      string
	storeSet bool
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithClock sets the limiter's time: the clock Acquire and TryAcquire sleep on, and the
// "now" of the default private store, so both agree. Tests and simulations pass a
// clockx.Fake (sleeps then advance virtual time at once). With WithStore,
// the store keeps its own "now" and c only overrides the clock slept on, which is by
// default the store's (store.Clocked; local.WithClock, distributed.WithClientClock), else
// clockx.Real(). Without either option it is clockx.Real(). A nil c is an error (leave the
// option out for the default).
func WithClock(c clockx.Clock) Option {
	return optionFunc(func(o *options) { o.clock, o.clockNil = c, c == nil })
}

// WithStore keeps the limiter's state under key in s instead of in a private in-memory
// store: several Limiters (in one process or many) with the same config on the same key and
// store are paced as one Guava RateLimiter. With a distributed.Store every reservation is one
// atomic script in Redis, at the server's time. The default is a private local.Store on the
// limiter's clock. The limiter sleeps on s's clock unless WithClock says otherwise. The
// Limiter does not close s.
func WithStore(s store.Store, key string) Option {
	return optionFunc(func(o *options) { o.store, o.key, o.storeSet = s, key, true })
}

// collect applies opts and checks them.
func collect(opts []Option) (options, error) {
	var o options
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	const ctor = "smooth.New"
	switch {
	case o.clockNil:
		return o, fmt.Errorf("%w: %s: WithClock(nil): the clock is nil", algo.ErrInvalidConfig, ctor)
	case o.storeSet && nilcheck.Nil(o.store):
		return o, fmt.Errorf("%w: %s: WithStore given a nil store", algo.ErrInvalidConfig, ctor)
	case o.storeSet && o.key == "":
		return o, fmt.Errorf("%w: %w: %s: WithStore given an empty key", algo.ErrInvalidConfig, store.ErrInvalidKey, ctor)
	}
	if o.clock == nil {
		o.clock = clockx.Real()
		if o.storeSet {
			o.clock = storeclock.Of(o.store) // sleep on the time the store decides on
		}
	}
	return o, nil
}
