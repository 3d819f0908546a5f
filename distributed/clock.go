package distributed

import (
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/luawire"
)

// A client clock and Redis's expiry.
//
// With WithClientClock the scripts decide at the client's time, but Redis expires keys on
// its own clock. A key written at client time c with a state that is fresh again after
// reset lives reset of real time; if the client clock then advances more slowly than real
// time (a fake clock that stands still, a clock stepped back), the key is gone while the
// client clock still says it holds grants, and the next call starts a fresh count: an
// over-admission. Call lag the real time minus the client time. A key written at lag L
// outlives its state, by the client's clock, as long as the lag of the calls that read it
// stays at most L + pad, when its TTL is padded by pad. So:
//
//   - every TTL is padded by the tolerance (WithClockTolerance), sent with the client time
//     as ARGV[2] ("now pad", see luawire.PaddedNow);
//   - the store keeps the lowest lag of its calls that are old enough for their keys to
//     have expired (older than the tolerance), and refuses a call whose lag exceeds it by
//     more than the tolerance, before the call and again when its reply is back (the
//     script ran in between, at a lag up to the reply's): the decision is then an error
//     wrapping algo.ErrInvalidConfig instead of a grant.
//
// Calls younger than the tolerance cannot have lost a key whose state still held
// anything (its TTL is at least the tolerance), whatever the clock did since, so a clock
// stepped back (a test resetting a fake clock) is refused only once the
// keys written before the step may have expired. The record is per store: clients that
// share keys must keep their clocks within the tolerance of each other themselves.

// clientClock is the clock of WithClientClock and the record of its lag.
type clientClock struct {
	clock clockx.Clock
	real  func() time.Time // real time; time.Now, or a test's clock
	t0    time.Time        // real() when the store was made: lags count from its reading
	r0    int64            // t0 in µs since the Unix epoch
	tol   int64            // the tolerance in µs, > 0

	mu sync.Mutex
	// buckets hold the lowest lag of the calls made since their start, newest last; a
	// bucket spans at most tol/4 of real time, and is folded into oldMin once its start
	// is tol old, so that oldMin covers every call older than tol (and a few younger ones,
	// which only makes the check stricter).
	buckets []lagBucket
	oldMin  int64 // the lowest lag of the calls folded in; math.MaxInt64: none
}

type lagBucket struct{ start, min int64 } // real µs of the first call, lowest lag

func newClientClock(c clockx.Clock, tolerance time.Duration, real func() time.Time) *clientClock {
	t0 := real()
	return &clientClock{clock: c, real: real, t0: t0, r0: t0.UnixMicro(),
		tol: max(int64(tolerance/time.Microsecond), 1), oldMin: math.MaxInt64}
}

// realMicros is real time in µs since the Unix epoch, counted by real's monotonic reading
// from t0, so that a step of the wall clock does not count as a change of the lag.
func (cc *clientClock) realMicros() int64 {
	return cc.r0 + int64(cc.real().Sub(cc.t0)/time.Microsecond)
}

// start returns the client time of a call, after checking and recording the call's lag.
func (cc *clientClock) start() (now int64, err error) {
	now = cc.clock.Now().UnixMicro()
	r := cc.realMicros()
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if err := cc.check(r, now); err != nil {
		return 0, err
	}
	lag := r - now
	if n := len(cc.buckets); n > 0 && r-cc.buckets[n-1].start < cc.tol/4 {
		cc.buckets[n-1].min = min(cc.buckets[n-1].min, lag)
	} else {
		cc.buckets = append(cc.buckets, lagBucket{start: r, min: lag})
	}
	return now, nil
}

// finish checks, once the reply of a call made at client time now is back, that the
// script did not run at a lag the keys' TTLs do not cover.
func (cc *clientClock) finish(now int64) error {
	r := cc.realMicros()
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.check(r, now)
}

// check folds the buckets old enough into oldMin and compares the lag at real time r and
// client time now with it. cc.mu is held.
func (cc *clientClock) check(r, now int64) error {
	i := 0
	for ; i < len(cc.buckets) && r-cc.buckets[i].start >= cc.tol; i++ {
		cc.oldMin = min(cc.oldMin, cc.buckets[i].min)
	}
	if i > 0 {
		cc.buckets = append(cc.buckets[:0], cc.buckets[i:]...)
	}
	if cc.oldMin == math.MaxInt64 || r-now <= cc.oldMin+cc.tol {
		return nil
	}
	behind := time.Duration(r-now-cc.oldMin) * time.Microsecond
	return fmt.Errorf("%w: distributed: WithClientClock: the client clock has fallen %v behind real time "+
		"since calls made more than the tolerance (%v) ago, so Redis may have expired keys whose state, "+
		"by the client clock, still holds grants; refusing the call rather than over-admitting "+
		"(see WithClockTolerance)", algo.ErrInvalidConfig, behind, time.Duration(cc.tol)*time.Microsecond)
}

// now is the instant of a script call and its ARGV[2]: the server's TIME (luawire.ServerTime,
// "") unless WithClientClock gave the store a clock, whose lag is checked (see above).
// The client time is sent with the TTL padding to scripts that read it (pads: the
// module's own, luawire.Composed), alone to others, whose TTLs are then their own affair.
func (s *Store) now(pads bool) (now int64, arg any, err error) {
	if s.cc == nil {
		return luawire.ServerTime, luawire.Now(luawire.ServerTime), nil
	}
	if now, err = s.cc.start(); err != nil {
		return 0, nil, err
	}
	if !pads {
		return now, luawire.Now(now), nil
	}
	return now, luawire.PaddedNow(now, s.cc.tol), nil
}

// finished is the check after a call made at now that returned a decision (see above).
func (s *Store) finished(now int64) error {
	if s.cc == nil {
		return nil
	}
	return s.cc.finish(now)
}
