package limiter

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
)

// CircuitBreaker configures a Limiter's circuit breaker (WithCircuitBreaker); its zero
// value, and each zero field, is the default. It counts outages only (errors wrapping
// store.ErrUnavailable but not store.ErrKeyUnavailable, and WithTimeout deadlines). It
// opens when a window (it starts at a failure and lasts Window) ends with at least MinCalls
// calls of which at least FailureRate failed, or when ConsecutiveFailures outages in a row
// span at least Window: a caller too quiet to fill a window is cut off, a burst of failures
// shorter than Window is not. Open, for CoolDown every call is answered by the failure
// policy with an error wrapping ErrCircuitOpen, without touching the store; then one probe
// goes through (half-open; the others are answered as when open): its success closes the
// breaker, its failure reopens it. Window and CoolDown run on the WithClock clock.
type CircuitBreaker struct {
	FailureRate         float64       // share of a window's calls that must fail, in (0, 1]; default 0.5
	MinCalls            int           // calls a window needs to be judged, ≥ 1; default 20
	Window              time.Duration // > 0; default 1 s
	CoolDown            time.Duration // how long it stays open before a probe, > 0; default 1 s
	ConsecutiveFailures int           // outages in a row that open it when they span Window, ≥ 1; default 5
	Off                 bool          // no breaker: every call goes to the store; the fields but Logger are ignored
	// Logger, if not nil, is told of each outage in one line per transition, Off or not:
	// began (Warn, with its cause), breaker opened (Error), recovered (Info, with how long
	// it lasted). The default, nil, logs nothing. See docs/observability.md.
	Logger *slog.Logger
}

// The defaults of CircuitBreaker, documented on its fields.
const (
	defaultFailureRate         = 0.5
	defaultMinCalls            = 20
	defaultWindow              = time.Second
	defaultCoolDown            = time.Second
	defaultConsecutiveFailures = 5
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
	case c.ConsecutiveFailures < 0:
		return fmt.Errorf("%w: WithCircuitBreaker: ConsecutiveFailures must be ≥ 1 (0: the default), got %d",
			algo.ErrInvalidConfig, c.ConsecutiveFailures)
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
	if c.ConsecutiveFailures == 0 {
		c.ConsecutiveFailures = defaultConsecutiveFailures
	}
	return c
}

// The outages the breaker tracks for CircuitBreaker.Logger begin at a failure and end at
// the first call the store answers after it (for an open breaker, its probe): one line as
// each begins (with the first failure's error), one as the breaker opens (with the rule
// that opened it), one as each ends (with its length, on the breaker's clock). A failed
// probe is no transition of the outage: it logs nothing. The lines are logged outside mu,
// in the goroutine of the call that made the transition.

// breaker is the circuit breaker CircuitBreaker describes, timed on the limiter's clock,
// and the tracker of the outages its Logger is told of (with cfg.Off, it tracks and logs
// only, and always allows).
//
// The healthy path (closed, no window open, no failure since the last success) reads one
// atomic and takes no lock: the successes before a window's first failure are not counted,
// which is why a window starts at a failure and is judged only when it ends, once the
// calls after the failure had their say. Every transition happens under mu, which is
// never held across a store call nor while logging.
type breaker struct {
	cfg   CircuitBreaker // with defaults
	clock clockx.Clock
	obs   Observer     // told of every change of state, under mu; nil: none
	log   *slog.Logger // told of every outage's transitions, after mu; nil: none

	// dirty is false exactly when the breaker is closed with no window open and no
	// failure since the last success, so that allow and success can skip the lock on the
	// healthy path.
	dirty atomic.Bool

	mu        sync.Mutex
	state     breakerState
	calls     int       // answered calls of the open window (closed only; 0: no window open)
	failures  int       // of which outages
	windowEnd time.Time // when a window is open: its end
	openUntil time.Time // when open: the first instant a probe may go through
	run       int       // outages in a row since the last answered call (closed only)
	runStart  time.Time // the first one's
	down      bool      // an outage is going on: a failure since the last answered call
	downSince time.Time // its first failure
	events    [2]event  // what to log once mu is released
	nevents   int
}

type breakerState uint8

const (
	breakerClosed breakerState = iota
	breakerOpen
	breakerProbing // half-open, with the single probe in flight
)

// newBreaker returns the breaker of cfg on clock c; nil when cfg is Off with no Logger: no
// breaker, nothing to track.
func newBreaker(cfg CircuitBreaker, c clockx.Clock) *breaker {
	if cfg.Off && cfg.Logger == nil {
		return nil
	}
	return &breaker{cfg: cfg.withDefaults(), clock: c, log: cfg.Logger}
}

// clean reports that the breaker is closed with no window open and no failure since the
// last success: a call may go to the store, and its success needs no recording. It is one
// atomic load.
func (b *breaker) clean() bool { return !b.dirty.Load() }

// allow reports whether a call may go to the store, and whether that call is the half-open
// probe (whose outcome the caller must report with success, failure or release).
func (b *breaker) allow() (ok, probe bool) {
	if !b.dirty.Load() || b.cfg.Off {
		return true, false
	}
	b.mu.Lock()
	now := b.clock.Now()
	if b.state == breakerClosed {
		b.endWindow(now) // may open the breaker, which is logged
	}
	switch b.state {
	case breakerClosed:
		ok = true
	case breakerOpen:
		if !now.Before(b.openUntil) {
			b.set(breakerProbing)
			ok, probe = true, true
		}
	} // breakerProbing: another probe is in flight
	b.flush()
	return ok, probe
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

// success records a call the store answered (a failure of one key included). It ends an
// outage and a run of failures; it counts in an open window; it closes a half-open
// breaker. A late answer to a call sent before the breaker opened leaves an open breaker
// as it is: the probe decides.
func (b *breaker) success() {
	if !b.dirty.Load() {
		return
	}
	b.mu.Lock()
	now := b.clock.Now()
	switch b.state {
	case breakerClosed:
		b.endWindow(now) // a call answered after the window is not one of its calls
		if b.state != breakerClosed {
			break
		}
		if b.calls > 0 {
			b.calls++
		}
		b.run = 0
		b.recovered(now)
	case breakerProbing:
		b.set(breakerClosed)
		b.calls, b.failures, b.run = 0, 0, 0
		b.recovered(now)
	}
	b.settle()
	b.flush()
}

// failure records a call that found the store unavailable, with the store's error: a failed
// probe opens the breaker for CoolDown; otherwise the failure counts in the open window, or
// starts one, and in the run of failures, which may open the breaker.
func (b *breaker) failure(probe bool, cause error) {
	b.mu.Lock()
	now := b.clock.Now()
	if !b.down {
		b.down, b.downSince = true, now
		b.note(event{kind: outageBegan, cause: cause})
	}
	switch {
	case b.cfg.Off:
	case probe:
		b.open1(now, "", 0, 0) // the probe failed: open again, logging nothing
	case b.state == breakerClosed:
		if b.endWindow(now); b.state != breakerClosed {
			break // the window just judged opened the breaker
		}
		if b.calls == 0 {
			b.windowEnd = now.Add(b.cfg.Window)
		}
		b.calls++
		b.failures++
		if b.run == 0 {
			b.runStart = now
		}
		b.run++
		if b.run >= b.cfg.ConsecutiveFailures && now.Sub(b.runStart) >= b.cfg.Window {
			b.open1(now, "consecutive failures", b.run, b.run)
		}
	}
	// A late failure of a call sent before the breaker opened leaves it as it is.
	b.settle()
	b.flush()
}

// endWindow judges the open window if it has ended by now: the breaker opens, as from the
// window's end, when at least MinCalls calls were answered and at least FailureRate of
// them failed; else the window closes.
func (b *breaker) endWindow(now time.Time) {
	if b.calls == 0 || now.Before(b.windowEnd) {
		return
	}
	if b.calls >= b.cfg.MinCalls && float64(b.failures) >= b.cfg.FailureRate*float64(b.calls) {
		b.open1(b.windowEnd, "failure rate", b.failures, b.calls)
		return
	}
	b.calls, b.failures = 0, 0
	b.settle()
}

// open1 opens the breaker from the instant at; why names the rule that opened it, with the
// failures and calls it counted, for the log ("": a failed probe, not logged).
func (b *breaker) open1(at time.Time, why string, failures, calls int) {
	b.set(breakerOpen)
	b.calls, b.failures, b.run = 0, 0, 0
	b.openUntil = at.Add(b.cfg.CoolDown)
	b.dirty.Store(true)
	if why != "" {
		b.note(event{kind: breakerOpened, why: why, failures: failures, calls: calls})
	}
}

// recovered ends the outage going on, if any.
func (b *breaker) recovered(now time.Time) {
	if b.down {
		b.down = false
		b.note(event{kind: outageEnded, lasted: now.Sub(b.downSince)})
	}
}

// settle sets dirty from the state, under mu.
func (b *breaker) settle() {
	b.dirty.Store(b.state != breakerClosed || b.calls > 0 || b.run > 0 || b.down)
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

// An event is a transition of an outage for the log.
type event struct {
	kind     eventKind
	cause    error         // outageBegan
	why      string        // breakerOpened
	failures int           // breakerOpened
	calls    int           // breakerOpened
	lasted   time.Duration // outageEnded
}

type eventKind uint8

const (
	outageBegan eventKind = iota
	breakerOpened
	outageEnded
)

// note keeps e to log once mu is released, under mu.
func (b *breaker) note(e event) {
	if b.log != nil && b.nevents < len(b.events) {
		b.events[b.nevents] = e
		b.nevents++
	}
}

// flush releases mu and logs the events noted under it.
func (b *breaker) flush() {
	n := b.nevents
	if n == 0 {
		b.mu.Unlock()
		return
	}
	events := b.events
	b.nevents = 0
	b.mu.Unlock()
	ctx := context.Background()
	for _, e := range events[:n] {
		switch e.kind {
		case outageBegan:
			b.log.LogAttrs(ctx, slog.LevelWarn, "limiter: store outage began", slog.Any("cause", e.cause))
		case breakerOpened:
			b.log.LogAttrs(ctx, slog.LevelError, "limiter: circuit breaker opened",
				slog.String("by", e.why), slog.Int("failures", e.failures), slog.Int("calls", e.calls),
				slog.Duration("cool_down", b.cfg.CoolDown))
		case outageEnded:
			b.log.LogAttrs(ctx, slog.LevelInfo, "limiter: store recovered", slog.Duration("outage", e.lasted))
		}
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
