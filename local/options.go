package local

import (
	"time"

	"github.com/ratekit/limiter/clockx"
)

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
// and simulations pass a clockx.Fake. A nil clock keeps the default.
func WithClock(c clockx.Clock) Option {
	return optionFunc(func(o *options) {
		if c != nil {
			o.clock = c
		}
	})
}

// WithMaxKeys bounds the number of keys held (approximately: the bound is split evenly over
// the shards). When a new key finds its shard full, idle keys are removed first; if none is
// idle, the sampled key closest to fresh is evicted, forgetting its recent grants. The
// default, and n ≤ 0, is no bound.
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
