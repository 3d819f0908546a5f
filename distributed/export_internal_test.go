package distributed

import (
	"time"

	"github.com/ratekit/limiter/algo"
)

// Test hooks for the external tests of package distributed_test.

// QueuedCalls returns the number of calls waiting in s's batching queue, 0 without
// batching. Tests poll it to know that callers have queued behind a held pipeline.
func QueuedCalls(s *Store) int {
	if s.batch == nil {
		return 0
	}
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	return len(s.batch.queue)
}

// BatchLimits returns the MaxBatch and MaxInFlight s runs with, after defaults and
// clamping; 0, 0 without batching.
func BatchLimits(s *Store) (maxBatch, maxInFlight int) {
	if s.batch == nil {
		return 0, 0
	}
	return s.batch.maxBatch, s.batch.maxInFlight
}

// BatchClosed reports whether s's batcher has stopped accepting calls.
func BatchClosed(s *Store) bool {
	if s.batch == nil {
		return false
	}
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	return s.batch.closed
}

// WithEvalOnly makes the store send every script with EVALSHA, as it does on a server
// without functions (Redis before 7), so that path stays tested on Redis 7.
func WithEvalOnly() Option { return optionFunc(func(o *options) { o.evalOnly = true }) }

// EvalOnly reports whether s sends its scripts with EVALSHA only.
func EvalOnly(s *Store) bool { return s.evalOnly.Load() }

// WithRealClock makes the store read real time from f, for the check of a client clock's
// lag (clock.go), so that tests can move real time without sleeping.
func WithRealClock(f func() time.Time) Option {
	return optionFunc(func(o *options) { o.real = f })
}

// MaxAbandonedCalls is maxAbandonedCalls, for the tests of the guard's bound.
const MaxAbandonedCalls = maxAbandonedCalls

// The defaults and bounds the tests compare with.
const (
	DefaultMaxBatch       = defaultMaxBatch
	DefaultMaxInFlight    = defaultMaxInFlight
	MaxBatchLimit         = maxBatchLimit
	MaxInFlightLimit      = maxInFlightLimit
	DefaultClockTolerance = defaultClockTolerance
)

// WithZeroReplicaAck is WithReplicaAck asking for no replica, which New refuses: every
// call is still followed by WAIT, which a server without replicas answers at once.
func WithZeroReplicaAck() Option {
	return optionFunc(func(o *options) { o.ack = &replicaAck{replicas: 0, timeout: time.Millisecond} })
}

// Busy makes s's batcher count a call in flight until release is called, so that the
// calls made meanwhile queue for a pipeline rather than go on their own (with MaxInFlight
// ≥ 2 a flusher sends them at once). s must be idle and batching.
func Busy(s *Store) (release func()) {
	if s.batch == nil || !s.batch.alone() {
		panic("distributed.Busy: the store is not batching, or not idle")
	}
	return s.batch.done
}

// Flushers returns the number of flusher goroutines s's batcher runs, 0 without batching.
func Flushers(s *Store) int {
	if s.batch == nil {
		return 0
	}
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	return s.batch.flushers
}

// OnFlusherStart makes every flusher of s's batcher call f before it does anything else,
// so that a test can hold a flusher that was started while others run. Set it while s is
// idle.
func OnFlusherStart(s *Store, f func()) { s.batch.onStart = f }

// IdleFlushers returns the number of s's flushers waiting for a free pipeline slot.
func IdleFlushers(s *Store) int {
	s.batch.mu.Lock()
	defer s.batch.mu.Unlock()
	return s.batch.idle
}

// FunctionNames returns the functions of def's library as the store sends them: the
// function of the calling convention, the quick one and the multi one; "" for each the
// store does not send.
func FunctionNames(def *algo.Script) (fn, quick, multi string) {
	e := newEntry(def, formRate)
	s, _ := e.quick.(string)
	m, _ := e.multi.(string)
	f, _ := e.fn.(string)
	return f, s, m
}
