package local

import (
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/store"
)

var _ store.Clocked = (*Store)(nil)

// maxShards is the largest number of shards WithShards accepts.
const maxShards = 1 << 16

// Option configures a Store made by New. A nil Option is ignored; an Option given a value
// it cannot use makes New return an error wrapping algo.ErrInvalidConfig.
type Option interface {
	apply(*options)
}

type options struct {
	clock   clockx.Clock
	shards  int
	maxKeys int
	sweep   time.Duration
	err     error // the first invalid option
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// invalid records the first invalid option, naming it and its value.
func (o *options) invalid(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("%w: local.New: "+format, append([]any{algo.ErrInvalidConfig}, args...)...)
	}
}

// WithClock sets the clock the store reads "now" from. The default is clockx.Real(); tests
// and simulations pass a clockx.Fake. A nil c is an error (leave the option out for the
// default). Store.Clock reports it, so the limiter, smooth and semaphore packages sleep on
// it by default.
func WithClock(c clockx.Clock) Option {
	return optionFunc(func(o *options) {
		if c == nil {
			o.invalid("WithClock(nil): the clock is nil")
			return
		}
		o.clock = c
	})
}

// WithMaxKeys bounds the number of keys held, approximately: the bound is split evenly over
// the shards, rounded up. The default, and n ≤ 0, is no bound.
//
// A key that still limits is never forgotten to make room. When a new key finds its shard
// full and no idle key to evict, it is decided by an overflow state shared by the new keys
// of its algorithm when the algorithm is algo.OverflowSafe (FixedWindow, SlidingWindowLog,
// SlidingWindowCounter, TokenBucket, LeakyBucket, GCRA, and custom ones that state it), or
// else denied with a RetryAfter (the smooth limiters, Penalty, and custom algorithms that
// do not; so is a Charge, which then records nothing: see Store.Apply). Store.Overflows
// counts such requests. Semaphores are never evicted.
// docs/local.md explains the rules.
func WithMaxKeys(n int) Option {
	return optionFunc(func(o *options) {
		if n < 0 {
			o.invalid("WithMaxKeys(%d): the bound must be ≥ 0 (0: no bound)", n)
			return
		}
		o.maxKeys = n
	})
}

// WithShards sets the number of lock shards, rounded up to a power of two. The default is
// 4 × GOMAXPROCS; n must be in [1, 65536].
func WithShards(n int) Option {
	return optionFunc(func(o *options) {
		if n < 1 || n > maxShards {
			o.invalid("WithShards(%d): the number of shards must be in [1, %d]", n, maxShards)
			return
		}
		o.shards = n
	})
}

// WithSweepInterval sets how often the background sweeper removes idle keys. The default
// is one minute; d = 0 disables the sweeper (idle keys then go only when WithMaxKeys needs
// room, or when Sweep is called); d < 0 is an error.
func WithSweepInterval(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d < 0 {
			o.invalid("WithSweepInterval(%v): the interval must be ≥ 0 (0: no sweeper)", d)
			return
		}
		o.sweep = d
	})
}

// Clock returns the clock the store reads "now" from (see WithClock). It implements
// store.Clocked.
func (s *Store) Clock() clockx.Clock { return s.clock }
