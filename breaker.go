package limiter

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
)

// CircuitBreaker configures a Limiter's circuit breaker (WithCircuitBreaker); its zero
// value, and each zero field, is the default. It counts outages only (errors wrapping
// store.ErrUnavailable but not store.ErrKeyUnavailable, and WithTimeout deadlines). A window
// starts at a failure and lasts Window; if it ends with at least MinCalls calls of which
// at least FailureRate failed, the breaker opens: for CoolDown every call is answered by
// the failure policy with an error wrapping ErrCircuitOpen, without touching the store.
// Then one probe call goes through (half-open; the others are answered as when open): its
// success closes the breaker, its failure reopens it. Window and CoolDown run on the
// WithClock clock. A Limiter called fewer than MinCalls times per Window is never cut off.
type CircuitBreaker struct {
	FailureRate float64       // share of a window's calls that must fail, in (0, 1]; default 0.5
	MinCalls    int           // calls a window needs to be judged, ≥ 1; default 20
	Window      time.Duration // > 0; default 1 s
	CoolDown    time.Duration // how long it stays open before a probe, > 0; default 1 s
	Off         bool          // no breaker: every call goes to the store; the other fields are ignored
}

// The defaults of CircuitBreaker, documented on its fields.
const (
	defaultFailureRate = 0.5
	defaultMinCalls    = 20
	defaultWindow      = time.Second
	defaultCoolDown    = time.Second
)

// validate reports, wrapping algo.ErrInvalidConfig, the field of c that cannot be used.
func (c CircuitBreaker) validate() error {
	switch {
	case c.Off:
		return nil
	case math.IsNaN(c.FailureRate) || c.FailureRate < 0 || c.FailureRate > 1:
		return fmt.Errorf("%w: WithCircuitBreaker: FailureRate must be in (0, 1] (0: the default), got %v",
			algo.ErrInvalidConfig, c.FailureRate)
	case c.MinCalls < 0:
		return fmt.Errorf("%w: WithCircuitBreaker: MinCalls must be ≥ 1 (0: the default), got %d", algo.ErrInvalidConfig, c.MinCalls)
	case c.Window < 0:
		return fmt.Errorf("%w: WithCircuitBreaker: Window must be > 0 (0: the default), got %v", algo.ErrInvalidConfig, c.Window)
	case c.CoolDown < 0:
		return fmt.Errorf("%w: WithCircuitBreaker: CoolDown must be > 0 (0: the default), got %v", algo.ErrInvalidConfig, c.CoolDown)
	}
	return nil
}

// withDefaults returns c with its zero fields set to their defaults.
func (c CircuitBreaker) withDefaults() CircuitBreaker {
	if c.FailureRate == 0 {
		c.FailureRate = defaultFailureRate
	}
	if c.MinCalls == 0 {
		c.MinCalls = defaultMinCalls
	}
	if c.Window == 0 {
		c.Window = defaultWindow
	}
	if c.CoolDown == 0 {
		c.CoolDown = defaultCoolDown
	}
	return c
}

// breaker is the circuit breaker CircuitBreaker describes, timed on the limiter's clock.
//
// The healthy path (closed, no window open) reads one atomic and takes no lock: the
// successes before a window's first failure are not counted, which is why a window starts
// at a failure and is judged only when it ends, once the calls after the failure had
// their say. Every transition happens under mu, which is never held across a store call.
type breaker struct {
	cfg   CircuitBreaker // with defaults
	clock clockx.Clock
	obs   Observer // told of every change of state, under mu; nil: none

	// dirty is false exactly when the breaker is closed with no window open, so that
	// allow and success can skip the lock on the healthy path.
	dirty atomic.Bool

	mu        sync.Mutex
	state     breakerState
	calls     int       // answered calls of the open window (closed only)
	failures  int       // of which outages
	windowEnd time.Time // when closed and dirty: the end of the open window
	openUntil time.Time // when open: the first instant a probe may go through
}

type breakerState uint8

const (
	breakerClosed breakerState = iota
	breakerOpen
	breakerProbing // half-open, with the single probe in flight
)

func newBreaker(cfg CircuitBreaker, c clockx.Clock) *breaker {
	return &breaker{cfg: cfg.withDefaults(), clock: c}
}

// clean reports that the breaker is closed with no window open: a call may go to the
// store, and its success needs no recording. It is one atomic load.
func (b *breaker) clean() bool { return !b.dirty.Load() }

// allow reports whether a call may go to the store, and whether that call is the half-open
// probe (whose outcome the caller must report with success, failure or release).
func (b *breaker) allow() (ok, probe bool) {
	if !b.dirty.Load() {
		return true, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	if b.state == breakerClosed && (now.Before(b.windowEnd) || !b.judge()) {
		return true, false
	}
	switch b.state {
	case breakerOpen:
		if now.Before(b.openUntil) {
			return false, false
		}
		b.set(breakerProbing)
		return true, true
	default: // another probe is in flight
		return false, false
	}
}

// open reports whether calls are being skipped now, without claiming the probe.
func (b *breaker) open() bool {
	if !b.dirty.Load() {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.state == breakerProbing || (b.state == breakerOpen && b.clock.Now().Before(b.openUntil))
}

// success records a call the store answered (a failure of one key included). It counts
// in an open window; it closes a half-open breaker. A late answer to a call sent before
// the breaker opened leaves an open breaker as it is: the probe decides.
func (b *breaker) success() {
	if !b.dirty.Load() {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch b.state {
	case breakerClosed:
		if !b.dirty.Load() { // the window was judged meanwhile
			return
		}
		if !b.clock.Now().Before(b.windowEnd) {
			b.judge() // this call answered after the window: it is not one of its calls
			return
		}
		b.calls++
	case breakerProbing:
		b.set(breakerClosed)
		b.reset()
	}
}

// failure records a call that found the store unavailable: a failed probe opens the
// breaker for CoolDown; otherwise the failure counts in the open window, or starts one.
func (b *breaker) failure(probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.clock.Now()
	switch {
	case probe:
		b.open1(now)
	case b.state == breakerClosed:
		if b.dirty.Load() && !now.Before(b.windowEnd) && b.judge() {
			return
		}
		if !b.dirty.Load() {
			b.windowEnd = now.Add(b.cfg.Window)
			b.dirty.Store(true)
		}
		b.calls++
		b.failures++
	}
	// A late failure of a call sent before the breaker opened leaves it as it is.
}

// judge ends the open window, which has ended: the breaker opens, as from the window's
// end, when at least MinCalls calls were answered and at least FailureRate of them
// failed, else it is clean again. It reports whether the breaker opened.
func (b *breaker) judge() bool {
	if b.calls >= b.cfg.MinCalls && float64(b.failures) >= b.cfg.FailureRate*float64(b.calls) {
		b.open1(b.windowEnd)
		return true
	}
	b.reset()
	return false
}

// open1 opens the breaker from the instant at.
func (b *breaker) open1(at time.Time) {
	b.set(breakerOpen)
	b.calls, b.failures = 0, 0
	b.openUntil = at.Add(b.cfg.CoolDown)
	b.dirty.Store(true)
}

// reset leaves the breaker closed with no window open.
func (b *breaker) reset() {
	b.calls, b.failures = 0, 0
	b.dirty.Store(false)
}

// release ends a probe that told nothing about the store (a bad request, a cancelled
// context): the next call becomes the probe.
func (b *breaker) release(probe bool) {
	if !probe {
		return
	}
	b.mu.Lock()
	if b.state == breakerProbing {
		b.set(breakerOpen) // openUntil has passed: the next allow probes
	}
	b.mu.Unlock()
}

// set moves the breaker to state s, under mu, telling the observer of a change.
func (b *breaker) set(s breakerState) {
	from := b.state
	b.state = s
	if b.obs != nil && from != s {
		b.obs.BreakerChanged(from.public(), s.public())
	}
}

// public is the BreakerState an Observer is told: a probe in flight is half-open.
func (s breakerState) public() BreakerState {
	switch s {
	case breakerOpen:
		return BreakerOpen
	case breakerProbing:
		return BreakerHalfOpen
	default:
		return BreakerClosed
	}
}
