package adaptive

import (
	"fmt"
	"math"
	"time"
)

// Defaults of Gradient, used when a field is left 0.
const (
	DefaultGradientTolerance  = 1.1
	DefaultGradientSmoothing  = 0.2
	DefaultGradientLongWindow = 10 * time.Minute
	// minGradient bounds one round's decrease: an outlier round cannot more than halve
	// the limit's target.
	minGradient = 0.5
	// dropGradient caps the gradient of a round with a drop, so a downstream that fails
	// fast (and so looks quick) still lowers the limit.
	dropGradient = 0.9
)

// Gradient moves the limit by comparing short- and long-term latency, in the spirit of
// Netflix's Gradient2. It works in rounds of about one round trip: a round ends with the
// first sample of a request admitted after the previous round ended, and its short-term
// latency is the mean latency of its samples. The long-term latency is the service's
// latency without queueing: it follows the short-term one down at once and up only
// slowly (an exponential average with the time constant LongWindow), so queueing under
// the limit does not become the new normal.
//
// At the end of a round the gradient is
//
//	g = clamp(Tolerance × long / short, 0.5, 1)
//
// When g is 1 the latency is within Tolerance of its floor: the limit grows by √limit,
// unless fewer than half the limit were in flight (the traffic, not the server, was the
// bottleneck). When g is below 1 requests are queueing: the limit moves a fraction
// Smoothing of the way towards limit × g. Since latency grows in proportion to the
// requests beyond the server's concurrency, the limit settles where the latency is
// Tolerance × its floor, that is at about Tolerance × the server's capacity. A round with
// a drop (outcome Timeout or Overload) has a gradient of at most 0.9.
//
// Gradient needs no latency threshold, but it learns the floor from what it sees: a
// service that starts overloaded, or that becomes permanently slower, takes up to
// LongWindow to be judged right.
//
// The zero value is usable: every zero field takes the default written on it.
type Gradient struct {
	// Initial is the limit before any sample; default DefaultInitial (20), within [Min, Max].
	Initial int
	// Min and Max bound the limit; defaults DefaultMin (1) and DefaultMax (1000).
	Min, Max int
	// Tolerance is how much the short-term latency may exceed the long-term one before
	// the limit shrinks, ≥ 1; default 1.1. Noisy services need more.
	Tolerance float64
	// Smoothing is the fraction of the way to its target the limit moves down per round,
	// in (0, 1]; default 0.2.
	Smoothing float64
	// LongWindow is the time constant with which the long-term latency rises towards the
	// short-term one; default 10 minutes.
	LongWindow time.Duration
}

// Validate reports fields out of range.
func (g Gradient) Validate() error {
	_, err := g.resolve()
	return err
}

func (g Gradient) resolve() (gradientConfig, error) {
	b, err := resolveBounds("Gradient", g.Initial, g.Min, g.Max)
	if err != nil {
		return gradientConfig{}, err
	}
	c := gradientConfig{bounds: b, tolerance: g.Tolerance, smoothing: g.Smoothing, long: g.LongWindow}
	if c.tolerance == 0 {
		c.tolerance = DefaultGradientTolerance
	}
	if c.smoothing == 0 {
		c.smoothing = DefaultGradientSmoothing
	}
	if c.long == 0 {
		c.long = DefaultGradientLongWindow
	}
	switch {
	case !(c.tolerance >= 1) || math.IsInf(c.tolerance, 0):
		return gradientConfig{}, fmt.Errorf("%w: Gradient: Tolerance must be a number ≥ 1, got %v", ErrInvalidConfig, g.Tolerance)
	case !(c.smoothing > 0 && c.smoothing <= 1):
		return gradientConfig{}, fmt.Errorf("%w: Gradient: Smoothing must be in (0, 1], got %v", ErrInvalidConfig, g.Smoothing)
	case c.long < 0:
		return gradientConfig{}, fmt.Errorf("%w: Gradient: LongWindow must be ≥ 0, got %v", ErrInvalidConfig, g.LongWindow)
	}
	return c, nil
}

// NewEstimator returns the Gradient state at the initial limit.
func (g Gradient) NewEstimator() Estimator {
	c, err := g.resolve()
	if err != nil {
		panic(err) // New validated it; a direct caller broke the contract
	}
	return &gradientEstimator{c: c, limit: float64(c.initial)}
}

// String describes the config with its defaults applied.
func (g Gradient) String() string {
	c, err := g.resolve()
	if err != nil {
		return fmt.Sprintf("gradient(invalid: %v)", err)
	}
	return fmt.Sprintf("gradient(limit %d in [%d, %d], tolerance %g, smoothing %g, long window %v)",
		c.initial, c.min, c.max, c.tolerance, c.smoothing, c.long)
}

type gradientConfig struct {
	bounds
	tolerance, smoothing float64
	long                 time.Duration
}

type gradientEstimator struct {
	c     gradientConfig
	limit float64
	// longRTT is the long-term latency in nanoseconds; 0 before the first round.
	longRTT float64
	// roundStart is when the last round ended; the round in progress ends with the first
	// sample of a request admitted at or after it.
	roundStart time.Time
	// The samples of the round in progress.
	sum      float64 // latencies, ns
	n        int
	inFlight int // the most in flight at an admission
	dropped  bool
}

func (e *gradientEstimator) Limit() int { return int(e.limit) }

func (e *gradientEstimator) Update(s Sample) int {
	e.sum += float64(max(s.Latency, 0))
	e.n++
	e.inFlight = max(e.inFlight, s.InFlight)
	e.dropped = e.dropped || s.Dropped
	if s.Start.Before(e.roundStart) {
		return e.Limit()
	}
	end := s.End()
	short := max(e.sum/float64(e.n), 1) // ns; 1 keeps the ratio finite
	switch {
	case e.longRTT == 0 || short < e.longRTT:
		e.longRTT = short
	case !e.roundStart.IsZero():
		// Exponential ageing by the round's duration: slow, so queueing held at the
		// tolerance cannot become the floor within a run.
		w := 1 - math.Exp(-float64(end.Sub(e.roundStart))/float64(e.c.long))
		e.longRTT += (short - e.longRTT) * max(w, 0)
	}
	g := e.c.tolerance * e.longRTT / short
	if e.dropped {
		g = min(g, dropGradient)
	}
	switch {
	case g < 1:
		e.limit = e.c.clamp(e.limit * (1 - e.c.smoothing*(1-max(g, minGradient))))
	case float64(2*e.inFlight) >= math.Floor(e.limit):
		// Full headroom without queueing (g = Tolerance), none at the tolerance (g = 1):
		// the limit slows down as it nears the point where it would turn.
		room := 1.0
		if e.c.tolerance > 1 {
			room = min((g-1)/(e.c.tolerance-1), 1)
		}
		e.limit = e.c.clamp(e.limit + room*math.Sqrt(e.limit))
	}
	e.roundStart = end
	e.sum, e.n, e.inFlight, e.dropped = 0, 0, 0, false
	return e.Limit()
}
