package local

import (
	"time"

	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/store"
)

var _ store.Clocked = (*Store)(nil)

// Option configures a Store.
type Option interface {
	apply(*options)
}

type options struct {
	clock   clockx.Clock
	shards  int
	maxKeys int
	sweep   time.Duration
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithClock sets the clock the store reads "now" from. The default is clockx.Real(); tests
// and simulations pass a clockx.Fake. A nil clock keeps the default. Store.Clock reports
// it, so the limiter, smooth and semaphore packages sleep on it by default.
func WithClock(c clockx.Clock) Option {
	return optionFunc(func(o *options) {
		if c != nil {
			o.clock = c
		}
	})
}

// WithMaxKeys bounds the number of keys held, approximately: the bound is split evenly over
// the shards, rounded up. The default, and n ≤ 0, is no bound.
//
// A key that still limits is never forgotten to make room. When a new key finds its shard
// full and no idle key to evict, it is decided by an overflow state shared by the new keys
// of its algorithm (FixedWindow, SlidingWindowLog, SlidingWindowCounter, TokenBucket,
// LeakyBucket, GCRA), or else denied with a RetryAfter (the smooth limiters and algorithms
// outside package algo). Store.Overflows counts such requests. Semaphores are never evicted.
// docs/local.md explains the rules.
func WithMaxKeys(n int) Option {
	return optionFunc(func(o *options) { o.maxKeys = n })
}

// WithShards sets the number of lock shards, rounded up to a power of two. The default is
// 4 × GOMAXPROCS; n ≤ 1 means a single shard.
func WithShards(n int) Option {
	return optionFunc(func(o *options) { o.shards = n })
}

// WithSweepInterval sets how often the background sweeper removes idle keys. The default
// is one minute; d ≤ 0 disables the sweeper (idle keys then go only when WithMaxKeys needs
// room, or when Sweep is called).
func WithSweepInterval(d time.Duration) Option {
	return optionFunc(func(o *options) { o.sweep = d })
}

// Clock returns the clock the store reads "now" from (see WithClock). It implements
// store.Clocked.
func (s *Store) Clock() clockx.Clock { return s.clock }
