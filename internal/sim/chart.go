package sim

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
)

// ErrChart reports a chart that cannot be drawn: no series, series of different lengths,
// no values, or a step that is not positive.
var ErrChart = errors.New("sim: invalid chart")

// Series is one line of a Chart: one value per step of the chart.
type Series struct {
	// Name labels the line in the legend.
	Name string
	// Values holds one value per step; NaN, infinite and negative values are drawn as 0.
	Values []float64
	// Reference draws the line as the backdrop of the others: grey and dashed in the SVG,
	// shaded in the ASCII chart. Charts of a simulation use it for the offered load.
	Reference bool
	// Separate draws the series on a scale of its own, for values of another unit or
	// size: as marks under the time axis of the ASCII chart ('^' where a value is above
	// 0), in a panel of its own below the others in the SVG. Charts of a simulation use
	// it for the permits charged.
	Separate bool
}

// Chart is a line chart over time: every series has one value per Step, the first one
// plotted at the middle of [0, Step).
type Chart struct {
	// Title and Subtitle head the chart; either may be empty.
	Title, Subtitle string
	// YLabel names the unit of the values.
	YLabel string
	// Step is the time between two values.
	Step time.Duration
	// Series are drawn in order, so later ones are on top.
	Series []Series
}

// NewChart returns the chart of one or more simulations of the same traffic: the offered
// load of the first one as the reference line, then one admitted line per simulation,
// named by names, and, when the first one charged (Config.Charge), the permits charged as
// a Separate series named "charged". Every rows must have the same length; step is their interval.
func NewChart(title, subtitle string, step time.Duration, names []string, runs [][]Interval) (Chart, error) {
	if len(runs) == 0 || len(names) != len(runs) {
		return Chart{}, fmt.Errorf("%w: %d names for %d runs", ErrChart, len(names), len(runs))
	}
	c := Chart{Title: title, Subtitle: subtitle, Step: step, YLabel: "requests per " + FormatDuration(step)}
	offered := make([]float64, len(runs[0]))
	for i, r := range runs[0] {
		offered[i] = float64(r.Offered)
	}
	c.Series = append(c.Series, Series{Name: "offered", Values: offered, Reference: true})
	for k, rows := range runs {
		admitted := make([]float64, len(rows))
		for i, r := range rows {
			admitted[i] = float64(r.Admitted)
		}
		name := names[k]
		if len(runs) == 1 {
			name = "admitted"
		}
		c.Series = append(c.Series, Series{Name: name, Values: admitted})
	}
	// Charges (Config.Charge) are the same for every run of one traffic: the first run's.
	charged := make([]float64, len(runs[0]))
	some := false
	for i, r := range runs[0] {
		charged[i] = float64(r.Charged)
		some = some || r.Charged > 0
	}
	if some {
		c.Series = append(c.Series, Series{Name: "charged", Values: charged, Separate: true})
	}
	return c, c.check()
}

// check reports a chart that cannot be drawn.
func (c Chart) check() error {
	if len(c.Series) == 0 {
		return fmt.Errorf("%w: no series", ErrChart)
	}
	n := len(c.Series[0].Values)
	if n == 0 {
		return fmt.Errorf("%w: series %q has no values", ErrChart, c.Series[0].Name)
	}
	for _, s := range c.Series[1:] {
		if len(s.Values) != n {
			return fmt.Errorf("%w: series %q has %d values, %q has %d",
				ErrChart, c.Series[0].Name, n, s.Name, len(s.Values))
		}
	}
	if c.Step <= 0 {
		return fmt.Errorf("%w: step must be > 0, got %v", ErrChart, c.Step)
	}
	return nil
}

// peak returns the largest value of every series drawn on the chart's scale (not
// Separate), at least 0.
func (c Chart) peak() float64 {
	p := 0.0
	for _, s := range c.Series {
		if s.Separate {
			continue
		}
		for _, v := range s.Values {
			p = max(p, clean(v))
		}
	}
	return p
}

// clean maps what cannot be drawn (NaN, ±Inf, negatives) to 0.
func clean(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0
	}
	return v
}

// formatNumber prints a tick value without useless digits.
func formatNumber(v float64) string {
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// FormatDuration prints d compactly: "1s", "250ms", "90s" (never "1m30s"), so that a
// column or an axis of durations stays narrow and comparable.
func FormatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d < time.Millisecond:
		return d.String()
	case d < time.Second:
		return formatNumber(math.Round(float64(d)/1e4)/1e2) + "ms"
	default:
		return formatNumber(math.Round(d.Seconds()*1000)/1000) + "s"
	}
}
