package limiter

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekit/limiter/clockx"
)

// breaker is a consecutive-failure circuit breaker timed on the limiter's clock.
//
// The healthy path (closed, no recent failure) reads one atomic and takes no lock; every
// transition happens under mu, which is never held across a store call.
type breaker struct {
	threshold int
	coolDown  time.Duration
	clock     clockx.Clock
	obs       Observer // told of every change of state, under mu; nil: none

	// dirty is false exactly when the breaker is closed with no failure counted, so that
	// allow and success can skip the lock on the healthy path.
	dirty atomic.Bool

	mu        sync.Mutex
	state     breakerState
	failures  int       // consecutive unavailability errors while closed
	openUntil time.Time // when open: the first instant a probe may go through
}

type breakerState uint8

const (
	breakerClosed breakerState = iota
	breakerOpen
	breakerProbing // half-open, with the single probe in flight
)

func newBreaker(threshold int, coolDown time.Duration, c clockx.Clock) *breaker {
	return &breaker{threshold: threshold, coolDown: coolDown, clock: c}
}

// clean reports that the breaker is closed with no failure counted: a call may go to the
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
	switch b.state {
	case breakerClosed:
		return true, false
	case breakerOpen:
		if b.clock.Now().Before(b.openUntil) {
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

// success records a call the store answered: the breaker closes.
func (b *breaker) success() {
	if !b.dirty.Load() {
		return
	}
	b.mu.Lock()
	b.set(breakerClosed)
	b.failures = 0
	b.dirty.Store(false)
	b.mu.Unlock()
}

// failure records a call that found the store unavailable. A failed probe, or the
// threshold-th consecutive failure, opens the breaker for coolDown.
func (b *breaker) failure(probe bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.dirty.Store(true)
	switch {
	case probe:
		b.open1()
	case b.state == breakerClosed:
		b.failures++
		if b.failures >= b.threshold {
			b.open1()
		}
	}
	// A late failure of a call sent before the breaker opened leaves it as it is.
}

func (b *breaker) open1() {
	b.set(breakerOpen)
	b.failures = 0
	b.openUntil = b.clock.Now().Add(b.coolDown)
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
