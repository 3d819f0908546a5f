package algo

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Forever is the MaxWait that puts no bound on how long a reservation may wait.
const Forever time.Duration = math.MaxInt64

// Never is the RetryAfter of a request that can never be granted, because it asks for more
// than the algorithm can ever hold at once (for example N > Burst).
const Never time.Duration = math.MaxInt64

// MaxMicros bounds every wait and span the algorithms compute, in microseconds (about 31.7
// years). It keeps float-to-integer conversions defined and durations in range. A wait of
// MaxMicros or more is never granted, not even with MaxWait [Forever]: it is reported as
// RetryAfter == [Never], and a ResetAfter that long as Never.
const MaxMicros int64 = 1_000_000_000_000_000

// maxExact is the largest integer a float64 (and so a Redis Lua number) holds exactly.
const maxExact = 1 << 53

// Errors returned by Validate. Both are wrapped with the offending field and value.
var (
	// ErrInvalidConfig reports a configuration that cannot be used.
	ErrInvalidConfig = errors.New("limiter: invalid config")
	// ErrInvalidRequest reports a request that cannot be answered (N ≤ 0).
	ErrInvalidRequest = errors.New("limiter: invalid request")
)

// Request asks for N permits. MaxWait 0 grants only what is available now; MaxWait > 0
// grants (and commits) a reservation that becomes usable within MaxWait, returning the wait
// in Decision.Wait; [Forever] puts no bound on the wait. A negative MaxWait is treated as 0.
//
// A Charge records N permits as used, whatever is left: it is never denied for lack of
// permits, and what it takes beyond what the key holds is debt that later requests wait
// out (docs/usage-based-limits.md). Its MaxWait is ignored. Its Decision is Allowed with Wait 0 and At
// the instant of the charge; Remaining is what a request arriving right after it could
// take (0 while in debt) and RetryAfter how long until one permit is available again (0
// when one is). Only an algorithm that states [Chargeable] may be sent one.
type Request struct {
	N       int64
	MaxWait time.Duration
	Charge  bool
}

// Validate reports whether r can be answered: N > 0, and for a Charge N ≤ 2^53 (a count
// a double, and so a Lua twin, holds exactly).
func (r Request) Validate() error {
	if r.N <= 0 {
		return fmt.Errorf("%w: N must be > 0, got %d", ErrInvalidRequest, r.N)
	}
	if r.Charge && r.N > maxExact {
		return fmt.Errorf("%w: a charge must be at most 2^53, got %d", ErrInvalidRequest, r.N)
	}
	return nil
}

// maxWaitMicros converts MaxWait to whole microseconds (rounded down, so a reservation never
// waits longer than asked), with Forever (and any MaxWait of MaxMicros or more) as
// MaxMicros-1: waits are clamped to MaxMicros, which stands for "MaxMicros or more", so a
// clamped wait is never granted and is reported as RetryAfter == Never instead.
func (r Request) maxWaitMicros() int64 {
	switch {
	case r.MaxWait <= 0:
		return 0
	case r.MaxWait == Forever || r.MaxWait/time.Microsecond >= time.Duration(MaxMicros):
		return MaxMicros - 1
	default:
		return int64(r.MaxWait / time.Microsecond)
	}
}

// Decision is the answer to a Request.
//
// Limit is the most the algorithm grants at once (Burst, Limit or Capacity). Remaining is
// what a request arriving right after this one could still take without waiting (≥ 0);
// in a [Peek], which takes nothing, what this one could take.
// RetryAfter is zero when Allowed; otherwise it is how long until the same request would be
// granted (with its MaxWait), or [Never]. ResetAfter is how long until the key's state is
// back to that of a fresh key (a full bucket, an empty window): stores expire the key then.
// Wait is how long an allowed request must wait before acting (0 unless it reserved).
// At is the store's time, in microseconds since the Unix epoch, at which an allowed request
// may act (now + Wait); it identifies the grant when it is refunded.
type Decision struct {
	Allowed    bool
	Limit      int64
	Remaining  int64
	RetryAfter time.Duration
	ResetAfter time.Duration
	Wait       time.Duration
	At         int64
}

// State is the mutable state one algorithm keeps for one key. It is opaque: only the
// Algorithm that created it with NewState may use it, and only under the store's lock.
type State any

// Algorithm is a rate-limiting rule. Every config struct of this package implements it by
// value. Apply and Refund are the Go reference transitions; a store calls them with its own
// notion of now, in microseconds since the Unix epoch, and with a Request it has validated.
//
// Transitions never panic and never create permits when now goes backwards: an earlier now
// is answered at least as strictly as the latest instant the state has seen (the buckets
// treat it as that instant).
//
// Beside these methods an algorithm may implement [Scripted] (a Lua twin, which the Redis
// store requires), [Quoter] (its limit and window, for headers and tests) and [Capable]
// (what stores may do with it), and its states [StateCloner] (copies, for applying several
// rules at once and for Peek) and [ConfigCarrier]. This package's algorithms have all that
// apply, their quota and capabilities through unexported methods read by [QuotaOf] and
// [CapabilitiesOf].
type Algorithm interface {
	// Name is the algorithm's kebab-case name, for example "token-bucket".
	Name() string
	// Validate reports, wrapping ErrInvalidConfig, which field makes the config unusable.
	Validate() error
	// Slot names the state this algorithm keeps beside a key. Two rules with the same Slot on
	// the same key share state (so a token bucket whose rate changes keeps its tokens); the
	// window algorithms include the window length, since a count means nothing across windows.
	Slot() string
	// NewState returns the state of a key never seen before.
	NewState() State
	// Apply answers req at now and commits what it grants into s.
	Apply(s State, now int64, req Request) Decision
	// Refund gives back, as far as the algorithm can, n permits granted by a Decision with
	// the given At; permits that already expired (a window that has passed) are not restored.
	// The buckets give back what golang.org/x/time/rate's Reservation.CancelAt does: n minus
	// what was reserved after the grant's At, never below zero, so that grants queued behind
	// it never share their instants with a new one.
	Refund(s State, now int64, n int64, at int64)
}

// seconds converts an elapsed time in µs to seconds the way time.Duration.Seconds does for
// the same span in nanoseconds, so token arithmetic matches golang.org/x/time/rate bit for
// bit. The Lua twins compute it with the same operations.
func seconds(us int64) float64 {
	if uint64(us) < 1_000_000 {
		// Under a second (the hot paths' usual span): sec is 0, and 0 + x is x exactly.
		return float64(us*1000) / 1e9
	}
	sec := us / 1_000_000
	rem := us % 1_000_000
	return float64(sec) + float64(rem*1000)/1e9
}

// ceilMicros rounds a non-negative wait in µs up (a caller never wakes early), clamped to
// [0, MaxMicros].
func ceilMicros(x float64) int64 {
	if !(x > 0) { // also catches NaN
		return 0
	}
	if x >= float64(MaxMicros) {
		return MaxMicros
	}
	return int64(math.Ceil(x))
}

// ceilCount rounds a non-negative count or span up without the MaxMicros clamp; callers
// pass values below 2^63.
func ceilCount(x float64) int64 {
	if !(x > 0) {
		return 0
	}
	return int64(math.Ceil(x))
}

// floorCount rounds a non-negative permit count down, clamped to [0, maxExact].
func floorCount(x float64) int64 {
	if !(x > 0) {
		return 0
	}
	if x >= maxExact {
		return maxExact
	}
	return int64(math.Floor(x))
}

// toDuration converts µs to a Duration; MaxMicros and beyond become Never.
func toDuration(us int64) time.Duration {
	if us >= MaxMicros {
		return Never
	}
	if us <= 0 {
		return 0
	}
	return time.Duration(us) * time.Microsecond
}

// retryAfter is the RetryAfter of a request denied because its wait exceeds maxWait (both
// in µs): the time until its wait has shrunk to maxWait, so that the same request is then
// granted; Never when the wait was clamped to MaxMicros (it may be longer).
func retryAfter(wait, maxWait int64) time.Duration {
	if wait >= MaxMicros {
		return Never
	}
	return toDuration(wait - maxWait)
}

// floorDiv divides rounding towards minus infinity, so window indexes stay aligned for
// instants before the epoch too.
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// maxSpan is the longest window or warm-up a config may have: MaxMicros µs (about 31.7
// years). Longer ones (a Duration reaches 292 years, 2^63 ns) are not exact in the Lua
// twins' doubles above 2^53 µs, nor are instants a window or two after now.
const maxSpan = time.Duration(MaxMicros) * time.Microsecond

// windowMicros validates a window length and returns it in whole microseconds.
func windowMicros(field string, w time.Duration) (int64, error) {
	if w < time.Microsecond {
		return 0, fmt.Errorf("%w: %s must be at least 1µs, got %v", ErrInvalidConfig, field, w)
	}
	if w > maxSpan {
		return 0, fmt.Errorf("%w: %s must be at most %v (MaxMicros µs), got %v", ErrInvalidConfig, field, maxSpan, w)
	}
	if w%time.Microsecond != 0 {
		return 0, fmt.Errorf("%w: %s must be a whole number of microseconds, got %v", ErrInvalidConfig, field, w)
	}
	return int64(w / time.Microsecond), nil
}

// checkRate and checkCount are split into an inlinable test and an error path: stores
// validate the config on every call, so a valid config must cost a few comparisons only.
func checkRate(field string, r float64) error {
	if r > 0 && r <= 1e9 { // false for NaN and ±Inf
		return nil
	}
	return rateError(field, r)
}

func rateError(field string, r float64) error {
	if math.IsNaN(r) || math.IsInf(r, 0) || r <= 0 {
		return fmt.Errorf("%w: %s must be a finite number > 0, got %v", ErrInvalidConfig, field, r)
	}
	return fmt.Errorf("%w: %s must be at most 1e9 per second, got %v", ErrInvalidConfig, field, r)
}

func checkCount(field string, n int64) error {
	if n > 0 && n <= maxExact {
		return nil
	}
	return countError(field, n)
}

func countError(field string, n int64) error {
	return fmt.Errorf("%w: %s must be in [1, 2^53], got %d", ErrInvalidConfig, field, n)
}

// never is the decision for a request larger than the algorithm can ever grant.
func never(limit, remaining int64, resetAfter int64) Decision {
	return Decision{Limit: limit, Remaining: remaining, RetryAfter: Never, ResetAfter: toDuration(resetAfter)}
}
