package distributed

import (
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/store"
)

var _ store.Clocked = (*Store)(nil)

// Defaults of the options.
const (
	// DefaultPrefix starts every Redis key the store writes.
	DefaultPrefix = "limiter:"
	// DefaultTimeout bounds each call to Redis. A healthy Redis answers a limiter script
	// in about a millisecond, and its latency spikes (a fork for persistence, a slow
	// command, a loaded client host) reach tens of milliseconds; 200 ms stays clear of
	// those while keeping what a hung server costs a request small: a limiter sits on the
	// request path, where seconds are not an option. With the limiter facade's circuit
	// breaker (on by default), only the first few calls after Redis stops answering pay it.
	DefaultTimeout = 200 * time.Millisecond
)

// Option configures a Store made by New. A nil Option is ignored; an Option given a value
// it cannot use makes New return an error wrapping algo.ErrInvalidConfig.
type Option interface {
	apply(*options)
}

type options struct {
	prefix   string
	timeout  time.Duration
	clock    clockx.Clock // nil: the server's TIME
	batching *Batching    // nil: one round trip per call
	ack      *replicaAck  // nil: no WAIT (WithReplicaAck)
	err      error        // the first invalid option
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// invalid records the first invalid option, naming it and its value.
func (o *options) invalid(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("%w: distributed.New: "+format, append([]any{algo.ErrInvalidConfig}, args...)...)
	}
}

// WithPrefix sets the string every Redis key of the store starts with, so that several
// applications (or several limiter configurations) can share one Redis without sharing
// state. The default is "limiter:". Braces and '%' in p are escaped like user keys (see
// the package documentation), so the prefix can never become, or break, the Cluster hash
// tag: the tag is always exactly the user key.
func WithPrefix(p string) Option {
	return optionFunc(func(o *options) { o.prefix = escape(p) })
}

// WithTimeout bounds every call to Redis (Apply, Refund, ApplyAll and the semaphore
// operations, with or without batching): the call returns by this deadline, or by the
// caller's context's earlier one, with an error wrapping store.ErrUnavailable and
// context.DeadlineExceeded. The default is DefaultTimeout (200 ms); d = 0 leaves the
// caller's context alone; d < 0 is an error.
//
// The bound holds whatever the client's options. go-redis honours context deadlines on
// sockets only when the client was created with ContextTimeoutEnabled: true; otherwise a
// call to a server that hangs waits for go-redis's ReadTimeout (5 s by default), and its
// retries. With such a client the store runs each call on a goroutine of its own and
// returns at the deadline, leaving the call to finish (or time out in go-redis) behind
// it; at most MaxAbandonedCalls (64) calls may be left so at once, beyond which calls
// fail at once with store.ErrUnavailable, so a hung server cannot make goroutines pile
// up. ContextTimeoutEnabled: true is still the better setting: calls run inline, and a
// timed-out call frees its connection at the deadline.
func WithTimeout(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d < 0 {
			o.invalid("WithTimeout(%v): the timeout must be ≥ 0 (0: none)", d)
			return
		}
		o.timeout = d
	})
}

// WithClientClock makes the store send c's time with every call, as ARGV[2] of the
// scripts, instead of letting each script read the server's TIME: client time instead of
// server time. The default is the server's time, which every client shares,
// so a client whose clock is skewed cannot admit more than the limit; WithClientClock
// exists for tests and simulations that drive time with a clockx.Fake, and for
// deployments that trust their clocks more than the server's. Store.Clock reports c, so
// the limiter, smooth and semaphore packages sleep on it by default. A nil c is an error
// (leave the option out for the server's time).
func WithClientClock(c clockx.Clock) Option {
	return optionFunc(func(o *options) {
		if c == nil {
			o.invalid("WithClientClock(nil): the clock is nil")
			return
		}
		o.clock = c
	})
}

// WithBatching makes Apply and Refund of concurrent callers share round trips: the
// store sends their EVALSHA commands as pipelines of at most b.MaxBatch commands, with at
// most b.MaxInFlight pipelines in flight. There is no timer. A call made while nothing is
// in flight is sent at once from its own goroutine, so a lone caller sees one round trip
// and the latency it has without batching; a call made while pipelines are in flight
// queues, and one of the store's flusher goroutines sends everything queued as soon as
// fewer than b.MaxInFlight pipelines are in flight. The zero Batching means the defaults
// (see Batching); a negative field is an error. Without this option, each call is its own
// round trip.
//
// Each script still runs on its own, atomically, and returns exactly the Decision it
// would return without batching; NOSCRIPT is handled as usual, invisibly. What changes is
// the cost: far fewer system calls and allocations per decision under concurrency, for
// up to one pipeline's round trip of added wait while the pipelines are busy. Calls of
// different goroutines carry no order, with or without batching.
//
// Failures stay per call. WithTimeout bounds a queued call's wait in the queue and on the
// wire together. A caller whose context ends first returns its context's error at once,
// wrapped in store.ErrUnavailable like any failed call; its script is not sent if it was
// still queued, and may still run if it was sent, as a timed-out call's may without
// batching. A pipeline that fails (connection refused, server gone) fails each of its
// calls with an error wrapping store.ErrUnavailable; an error of one script (WRONGTYPE)
// fails only its call, with the message it has without batching.
//
// The store runs b.MaxInFlight flusher goroutines until Close, which answers the calls
// already queued before it returns. ApplyAll with several rules and the semaphore
// operations are not batched.
func WithBatching(b Batching) Option {
	return optionFunc(func(o *options) {
		if b.MaxBatch < 0 || b.MaxInFlight < 0 {
			o.invalid("WithBatching(%+v): MaxBatch and MaxInFlight must be ≥ 0 (0: the default)", b)
			return
		}
		o.batching = &b
	})
}

// Clock returns the clock the store decides on: the client clock set with
// WithClientClock, or clockx.Real() when the scripts read the server's TIME (the server's
// clock is real time, give or take its skew). It implements store.Clocked.
func (s *Store) Clock() clockx.Clock {
	if s.clock != nil {
		return s.clock
	}
	return clockx.Real()
}
