package distributed

import (
	"time"

	"github.com/ratekit/limiter/clockx"
)

// Defaults of the options.
const (
	// DefaultPrefix starts every Redis key the store writes.
	DefaultPrefix = "limiter:"
	// DefaultTimeout bounds each call to Redis.
	DefaultTimeout = 500 * time.Millisecond
)

// Option configures a Store.
type Option interface {
	apply(*options)
}

type options struct {
	prefix  string
	timeout time.Duration
	clock   clockx.Clock // nil: the server's TIME
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// WithPrefix sets the string every Redis key of the store starts with, so that several
// applications (or several limiter configurations) can share one Redis without sharing
// state. The default is "limiter:". Braces and '%' in p are escaped like user keys (see
// the package documentation), so the prefix can never become, or break, the Cluster hash
// tag: the tag is always exactly the user key.
func WithPrefix(p string) Option {
	return optionFunc(func(o *options) { o.prefix = escape(p) })
}

// WithTimeout bounds every call to Redis: the context passed to Apply and Refund gets this
// deadline (an earlier deadline of the caller's context still wins). The default is 500 ms;
// d ≤ 0 leaves the caller's context alone.
//
// go-redis honours context deadlines on sockets only when the client was created with
// ContextTimeoutEnabled: true (otherwise its ReadTimeout and WriteTimeout, 3 s by default,
// bound a call to a server that hangs). Set it, or set those timeouts to a similar bound.
func WithTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) { o.timeout = d })
}

// WithClock makes the store send c's time with every call, as ARGV[2] of the scripts,
// instead of letting each script read the server's TIME. The default (and a nil c) is the
// server's time, which every client shares, so a client whose clock is skewed cannot admit
// more than the limit; WithClock exists for tests and simulations that drive time with a
// clockx.Fake, and for deployments that trust their clocks more than the server's.
func WithClock(c clockx.Clock) Option {
	return optionFunc(func(o *options) { o.clock = c })
}
