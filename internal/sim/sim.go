package sim

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/local"
)

// ErrConfig reports a simulation that cannot be run (a missing algorithm, a duration, rate
// or interval out of range). Run wraps it with the offending field.
var ErrConfig = errors.New("sim: invalid config")

// Bounds of a simulation, so that a typo cannot make Run allocate without limit.
const (
	// MaxDuration bounds Config.Duration.
	MaxDuration = 24 * time.Hour
	// MaxRows bounds the number of intervals of a result: beyond, neither the table nor a
	// chart can be read.
	MaxRows = 10_000
	// MaxArrivals bounds the number of requests a simulation offers.
	MaxArrivals = 5_000_000
)

// Config describes one simulation. The zero Interval means one second; the zero MaxWait
// means allow mode.
type Config struct {
	// Algorithm decides every request. It is validated by Run.
	Algorithm algo.Algorithm
	// Traffic is the shape of the offered load.
	Traffic Pattern
	// Base is the base offered rate in requests per second: the pattern offers multiples of
	// it (see Pattern). It must be in (0, 1e6].
	Base float64
	// Duration is the simulated time, in (0, MaxDuration].
	Duration time.Duration
	// Interval is the width of one row of the result; 0 means one second.
	Interval time.Duration
	// MaxWait is the Request.MaxWait of every simulated request. Zero is allow mode: a
	// request is granted only if a permit is available at once. A positive MaxWait is wait
	// mode: a request is granted if the algorithm can serve it within MaxWait (the
	// reservation is committed and the wait reported in Interval.Delayed and the delays);
	// algo.Forever puts no bound on the wait.
	MaxWait time.Duration
	// Charge is usage charged on top of the traffic (see Charge); the zero Charge is none.
	// A charge at the instant of arrivals is recorded before them.
	Charge Charge
}

// Interval is one row of a result: the requests that arrived in [Start, Start+width).
// Every request is counted in the row of its arrival, also when it was granted with a wait
// that ends in a later row.
type Interval struct {
	// Start is the offset of the interval from the start of the run.
	Start time.Duration
	// Offered counts the requests that arrived.
	Offered int
	// Admitted counts the requests granted, at once or after a wait.
	Admitted int
	// Delayed counts the admitted requests granted with a wait (Decision.Wait > 0); it is
	// always 0 in allow mode.
	Delayed int
	// TotalDelay sums the waits of the delayed requests.
	TotalDelay time.Duration
	// MaxDelay is the longest of those waits.
	MaxDelay time.Duration
	// Charged sums the permits charged in the interval (Config.Charge).
	Charged int64
}

// Denied returns the number of requests of the interval that were not granted.
func (r Interval) Denied() int { return r.Offered - r.Admitted }

// MeanDelay returns the mean wait of the delayed requests of the interval, 0 when none was
// delayed.
func (r Interval) MeanDelay() time.Duration {
	if r.Delayed == 0 {
		return 0
	}
	return r.TotalDelay / time.Duration(r.Delayed)
}

// Sum returns the totals of rows as one Interval starting at 0: counts and delays are
// added up, MaxDelay is the largest.
func Sum(rows []Interval) Interval {
	var t Interval
	for _, r := range rows {
		t.Offered += r.Offered
		t.Admitted += r.Admitted
		t.Delayed += r.Delayed
		t.TotalDelay += r.TotalDelay
		t.MaxDelay = max(t.MaxDelay, r.MaxDelay)
		t.Charged += r.Charged
	}
	return t
}

// Start is the virtual instant every simulation starts at: aligned to every window, so
// runs are reproducible.
var Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Run simulates cfg on a fresh in-memory store driven by a clockx.Fake and returns one
// Interval per Interval width (the last one may be cut short by Duration). Every request
// uses the same key and asks for one permit; the charges of cfg.Charge go to that key
// too. The same Config always gives the same result.
// Errors wrap ErrConfig, or algo.ErrInvalidConfig for an algorithm that does not validate.
func Run(cfg Config) ([]Interval, error) {
	if cfg.Algorithm == nil {
		return nil, fmt.Errorf("%w: no algorithm", ErrConfig)
	}
	if err := cfg.Algorithm.Validate(); err != nil {
		return nil, err
	}
	if cfg.Duration <= 0 || cfg.Duration > MaxDuration {
		return nil, fmt.Errorf("%w: duration must be in (0, %v], got %v", ErrConfig, MaxDuration, cfg.Duration)
	}
	if !(cfg.Base > 0) || cfg.Base > 1e6 {
		return nil, fmt.Errorf("%w: base rate must be in (0, 1e6], got %v", ErrConfig, cfg.Base)
	}
	if _, err := ParsePattern(string(cfg.Traffic)); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	width := cfg.Interval
	if width == 0 {
		width = time.Second
	}
	if width < 0 {
		return nil, fmt.Errorf("%w: interval must be > 0, got %v", ErrConfig, width)
	}
	n := (cfg.Duration + width - 1) / width
	if n > MaxRows {
		return nil, fmt.Errorf("%w: %v in intervals of %v makes %d rows, more than %d",
			ErrConfig, cfg.Duration, width, n, MaxRows)
	}
	if want := cfg.Traffic.mean() * cfg.Base * cfg.Duration.Seconds(); want > MaxArrivals {
		return nil, fmt.Errorf("%w: %s traffic at base rate %g for %v offers about %.0f requests, more than %d",
			ErrConfig, cfg.Traffic, cfg.Base, cfg.Duration, want, MaxArrivals)
	}

	charges, err := cfg.Charge.instants(cfg.Algorithm, cfg.Duration)
	if err != nil {
		return nil, err
	}

	clk := clockx.NewFake(Start)
	s, err := local.New(local.WithClock(clk), local.WithSweepInterval(0))
	if err != nil {
		return nil, err
	}
	defer s.Close()

	rows := make([]Interval, n)
	for i := range rows {
		rows[i].Start = time.Duration(i) * width
	}
	ctx := context.Background()
	req := algo.Request{N: 1, MaxWait: max(cfg.MaxWait, 0)}
	charge := func(at time.Duration) error {
		clk.Set(Start.Add(at))
		if _, err := s.Apply(ctx, "sim", cfg.Algorithm, algo.Request{N: cfg.Charge.N, Charge: true}); err != nil {
			return fmt.Errorf("sim: %s: charge at %v: %w", cfg.Algorithm.Name(), at, err)
		}
		rows[at/width].Charged += cfg.Charge.N
		return nil
	}
	for _, at := range cfg.Traffic.Arrivals(cfg.Base, cfg.Duration) {
		for ; len(charges) > 0 && charges[0] <= at; charges = charges[1:] {
			if err := charge(charges[0]); err != nil {
				return nil, err
			}
		}
		clk.Set(Start.Add(at))
		d, err := s.Apply(ctx, "sim", cfg.Algorithm, req)
		if err != nil {
			return nil, fmt.Errorf("sim: %s at %v: %w", cfg.Algorithm.Name(), at, err)
		}
		row := &rows[at/width]
		row.Offered++
		if !d.Allowed {
			continue
		}
		row.Admitted++
		if d.Wait > 0 {
			row.Delayed++
			row.TotalDelay += d.Wait
			row.MaxDelay = max(row.MaxDelay, d.Wait)
		}
	}
	for _, at := range charges { // after the last arrival
		if err := charge(at); err != nil {
			return nil, err
		}
	}
	return rows, nil
}
