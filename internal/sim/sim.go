package sim

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/local"
)

// Config describes one simulation.
type Config struct {
	Algorithm algo.Algorithm
	Traffic   Pattern
	Base      float64       // base offered rate, requests per second
	Duration  time.Duration // length of the run
	Interval  time.Duration // width of one row of the result; 0 means one second
}

// Interval is one row of a result.
type Interval struct {
	Start    time.Duration // offset of the interval from the start of the run
	Offered  int
	Admitted int
}

// Start is the virtual instant every simulation starts at: aligned to every window, so
// runs are reproducible.
var Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Run simulates cfg and returns one Interval per Interval width.
func Run(cfg Config) ([]Interval, error) {
	if cfg.Algorithm == nil {
		return nil, fmt.Errorf("sim: no algorithm")
	}
	if err := cfg.Algorithm.Validate(); err != nil {
		return nil, err
	}
	if cfg.Duration <= 0 || cfg.Duration > 24*time.Hour {
		return nil, fmt.Errorf("sim: duration must be in (0, 24h], got %v", cfg.Duration)
	}
	if !(cfg.Base > 0) || cfg.Base > 1e6 {
		return nil, fmt.Errorf("sim: base rate must be in (0, 1e6], got %v", cfg.Base)
	}
	width := cfg.Interval
	if width <= 0 {
		width = time.Second
	}
	clk := clockx.NewFake(Start)
	s := local.New(local.WithClock(clk), local.WithSweepInterval(0))
	defer s.Close()

	rows := make([]Interval, (cfg.Duration+width-1)/width)
	for i := range rows {
		rows[i].Start = time.Duration(i) * width
	}
	ctx := context.Background()
	for _, at := range cfg.Traffic.Arrivals(cfg.Base, cfg.Duration) {
		clk.Set(Start.Add(at))
		d, err := s.Apply(ctx, "sim", cfg.Algorithm, algo.Request{N: 1})
		if err != nil {
			return nil, err
		}
		row := &rows[at/width]
		row.Offered++
		if d.Allowed {
			row.Admitted++
		}
	}
	return rows, nil
}
