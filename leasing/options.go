package leasing

import (
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
)

// Defaults of the options.
const (
	// defaultTTL is how long a lease lives at most: long enough that a hot key takes a
	// slice every few hundred requests, short enough that a process that stops using a key
	// gives back its leftover soon.
	defaultTTL = 100 * time.Millisecond
	// defaultMaxKeys bounds the leases held at once.
	defaultMaxKeys = 10_000
)

// Option configures a Store made by New. A nil Option is ignored.
type Option interface{ apply(*options) }

type options struct {
	ttl     time.Duration
	maxKeys int
	err     error
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithTTL bounds how long a lease lives: its leftover is given back at the first call on
// the key after it ends (or at Close). A fixed window's lease also ends with the window
// that counted it (the ResetAfter of the inner decision that granted it). The default is
// 100 ms: long enough that a hot key takes a slice every few hundred requests, short
// enough that a process that stops using a key gives back its leftover soon. d ≤ 0 is an
// error of New.
func WithTTL(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d <= 0 && o.err == nil {
			o.err = fmt.Errorf("%w: leasing.New: WithTTL(%v): the TTL must be > 0", algo.ErrInvalidConfig, d)
		}
		o.ttl = d
	})
}

// WithMaxKeys bounds the keys holding a lease at once (default 10,000), spread
// over at most 32 shards: a new key in a full shard first drops its leases that ended,
// then an arbitrary one that no caller is filling, giving each leftover back to its own
// key. The bound is exceeded only by leases being filled at that moment. n ≤ 0 is an
// error of New.
func WithMaxKeys(n int) Option {
	return optionFunc(func(o *options) {
		if n <= 0 && o.err == nil {
			o.err = fmt.Errorf("%w: leasing.New: WithMaxKeys(%d): must be > 0", algo.ErrInvalidConfig, n)
		}
		o.maxKeys = n
	})
}
