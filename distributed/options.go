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
	// defaultPrefix starts every Redis key the store writes.
	defaultPrefix = "limiter:"
	// defaultTimeout bounds each call to Redis (WithTimeout). A healthy Redis answers a limiter script
	// in about a millisecond, and its latency spikes (a fork for persistence, a slow
	// command, a loaded client host) reach tens of milliseconds; 200 ms stays clear of
	// those while keeping what a hung server costs a request small: a limiter sits on the
	// request path, where seconds are not an option. With the limiter facade's circuit
	// breaker (on by default), only the calls of about the first second after Redis stops
	// answering pay it.
	defaultTimeout = 200 * time.Millisecond
	// defaultClockTolerance is how far a client clock (WithClientClock) may fall behind
	// real time before the store refuses its calls, and what every TTL is padded by: far
	// more than a test holding a fake clock still needs, and a minute of extra memory per
	// key (see WithClockTolerance).
	defaultClockTolerance = time.Minute
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
	tol      time.Duration
	real     func() time.Time // real time for the client clock's check (a test hook)
	batching Batching         // Off: one round trip per call
	ack      *replicaAck      // nil: no WAIT (WithReplicaAck)
	denials  *DenialCache     // nil: no denial cache (WithDenialCache)
	evalOnly bool             // EVALSHA even where FCALL would do (a test hook)
	err      error            // the first invalid option
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
// docs/distributed.md, "Keys"), so the prefix can never become, or break, the Cluster hash
// tag: the tag is always exactly the user key.
func WithPrefix(p string) Option {
	return optionFunc(func(o *options) { o.prefix = escape(p) })
}

// WithTimeout bounds every call to Redis (every method of the Store, with or without
// batching): the call returns by this deadline, or by the caller's context's earlier one,
// with an error wrapping store.ErrUnavailable and context.DeadlineExceeded. The default
// is 200 ms; d = 0 leaves the caller's context alone; d < 0 is an error. Calls that start
// within d/64 of each other share one deadline (and its timer), the earliest's: a call may
// get up to d/64 less than d, never more, and costs no allocation for its deadline.
//
// The bound holds whatever the client's options; with a client created without
// ContextTimeoutEnabled: true, a timed-out call is left to finish behind it (at most 64
// calls run so at once; a call beyond them waits for one to end, within its own
// deadline), so prefer ContextTimeoutEnabled. See docs/distributed.md ("Failure modes").
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
//
// Redis expires keys on its own clock, so a client clock that falls behind real time
// could outlive a key's TTL and start a fresh count. The store prevents it: every TTL is
// padded by the tolerance (WithClockTolerance, default 1 minute), and a call
// made when c has fallen more than the tolerance behind real time, compared with calls
// old enough for their keys to have expired, fails with an error wrapping
// algo.ErrInvalidConfig instead of deciding. Clients sharing keys must keep their clocks
// within the tolerance of each other. See docs/distributed.md ("Time").
func WithClientClock(c clockx.Clock) Option {
	return optionFunc(func(o *options) {
		if c == nil {
			o.invalid("WithClientClock(nil): the clock is nil")
			return
		}
		o.clock = c
	})
}

// WithClockTolerance sets how far the clock of WithClientClock may fall behind real time
// (a fake clock standing still, a clock stepped back) before the store refuses its calls,
// and pads every TTL the scripts set by d so that no key expires while the client clock
// still needs it. The default is 1 minute; a larger d keeps every
// key d longer in Redis's memory. d ≤ 0 is an error. Without WithClientClock the scripts
// read the server's TIME and the option has no effect.
func WithClockTolerance(d time.Duration) Option {
	return optionFunc(func(o *options) {
		if d <= 0 {
			o.invalid("WithClockTolerance(%v): the tolerance must be > 0", d)
			return
		}
		o.tol = d
	})
}

// WithBatching configures how the calls of concurrent callers share round trips, which a
// store does by default: every script the store runs (Apply, Refund, Peek, Reset,
// ApplyAll and the semaphore operations) goes to Redis in pipelines of at most b.MaxBatch
// commands, with at most b.MaxInFlight pipelines in flight. There is no timer: a call made
// while nothing is in flight is sent at once, so a lone caller sees one round trip, and a
// call made while pipelines are busy queues until one comes back. The zero Batching means
// the defaults (see Batching); a negative field is an error. Batching{Off: true} sends
// each call on its own round trip. With WithReplicaAck, calls are not batched.
//
// Each call still gets exactly the answer it would get without batching, and failures
// stay per call: WithTimeout bounds a call's wait in the queue and on the wire together,
// and a caller whose context ends returns at once. The store runs up to b.MaxInFlight
// flusher goroutines while calls are queued, none while it is idle; Close answers the
// calls already queued. See docs/distributed.md ("Batching").
func WithBatching(b Batching) Option {
	return optionFunc(func(o *options) {
		if b.MaxBatch < 0 || b.MaxInFlight < 0 {
			o.invalid("WithBatching(%+v): MaxBatch and MaxInFlight must be ≥ 0 (0: the default)", b)
			return
		}
		o.batching = b
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
