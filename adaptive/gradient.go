package adaptive

import (
	"fmt"
	"math"
	"time"

	"github.com/ratekit/limiter/algo"
)

// Defaults of Gradient, used when a field is left 0.
const (
	defaultGradientTolerance  = 1.1
	defaultGradientSmoothing  = 0.2
	defaultGradientLongWindow = 10 * time.Minute
	// minGradient bounds one round's decrease: an outlier round cannot more than halve
	// the limit's target.
	minGradient = 0.5
	// dropGradient caps the gradient of a round with a drop, so a downstream that fails
	// fast (and so looks quick) still lowers the limit.
	dropGradient = 0.9
	// queueRatio tells queueing from a slower service once the requests in flight have
	// halved during a decrease: a queued latency is in proportion to the requests in
	// flight, so it halves too (or falls to the service time), while the latency of a
	// service that became slower stays put. A latency still above queueRatio of what it was
	// is the service's own.
	queueRatio = 0.75
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
// A decrease needs evidence of queueing. The limit shrinks because the latency is above
// its floor; if that is queueing, halving the requests in flight halves the latency (or
// brings it down to the floor). So when a run of decreasing rounds has halved the
// requests in flight since its slowest round (or brought them to 1) and the latency has
// stayed above 3/4 of that round's, the service itself has become slower: the floor is set to
// the latency at that reduced load, measured then as TCP Vegas and BBR's ProbeRTT measure
// theirs, and the limit grows again from there. A service that becomes permanently slower
// is thus followed within a few round trips instead of falling to Min until LongWindow has
// aged the floor.
//
// Gradient needs no latency threshold, but it learns the floor from what it sees: a
// service that starts overloaded takes up to LongWindow to be judged right.
//
// The zero value is usable: every zero field takes the default written on it.
type Gradient struct {
	// Initial is the limit before any sample; default 20, within [Min, Max].
	Initial int
	// Min and Max bound the limit; defaults 1 and 1000.
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

// validate reports fields out of range.
func (g Gradient) validate() error {
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
		c.tolerance = defaultGradientTolerance
	}
	if c.smoothing == 0 {
		c.smoothing = defaultGradientSmoothing
	}
	if c.long == 0 {
		c.long = defaultGradientLongWindow
	}
	switch {
	case !(c.tolerance >= 1) || math.IsInf(c.tolerance, 0):
		return gradientConfig{}, fmt.Errorf("%w: Gradient: Tolerance must be a number ≥ 1, got %v", algo.ErrInvalidConfig, g.Tolerance)
	case !(c.smoothing > 0 && c.smoothing <= 1):
		return gradientConfig{}, fmt.Errorf("%w: Gradient: Smoothing must be in (0, 1], got %v", algo.ErrInvalidConfig, g.Smoothing)
	case c.long < 0:
		return gradientConfig{}, fmt.Errorf("%w: Gradient: LongWindow must be ≥ 0, got %v", algo.ErrInvalidConfig, g.LongWindow)
	}
	return c, nil
}

// newEstimator returns the Gradient state at the initial limit.
func (g Gradient) newEstimator() estimator {
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
	// The round of the current run of decreasing rounds with the highest latency
	// (refFlight 0: no run): its in-flight count and short-term latency, against which
	// queueing is judged.
	refFlight int
	refShort  float64
}

func (e *gradientEstimator) Limit() int { return int(e.limit) }

// queueing reports whether a round whose latency calls for a decrease shows queueing (see
// Gradient): true until the run of decreases it belongs to has halved the requests in
// flight since its slowest round, then whether the latency fell with them. A run whose
// latency did fall goes on, judged from this round. The slowest round, not the first, is
// the reference: a queue takes a round trip to show in the latency, so the first rounds
// of a run see only part of it.
func (e *gradientEstimator) queueing(short float64) bool {
	flight := max(e.inFlight, 1)
	if e.refFlight == 0 || short > e.refShort {
		e.refFlight, e.refShort = flight, short
		return true
	}
	if 2*flight > e.refFlight && flight > 1 {
		return true // not halved yet: no evidence either way
	}
	if short < queueRatio*e.refShort {
		e.refFlight, e.refShort = flight, short
		return true
	}
	e.refFlight = 0
	return false
}

func (e *gradientEstimator) Update(s sample) int {
	e.sum += float64(max(s.Latency, 0))
	e.n++
	e.inFlight = max(e.inFlight, s.InFlight)
	e.dropped = e.dropped || s.Dropped
	if s.Start.Before(e.roundStart) {
		return e.Limit()
	}
	end := s.end()
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
	if g < 1 && !e.queueing(short) {
		// Not queueing: the latency at this reduced load is the service's floor now.
		e.longRTT = short
		g = e.c.tolerance
	}
	if g >= 1 {
		e.refFlight = 0 // the run of decreases, if any, is over
	}
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
