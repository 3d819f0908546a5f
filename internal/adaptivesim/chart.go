package adaptivesim

import (
	"fmt"
	"time"

	"github.com/ratekit/limiter/internal/chart"
)

// Result is one simulation to draw: its name in the legend and its rows.
type Result struct {
	Name string
	Rows []Interval
}

// NewChart returns runs (all with the same intervals of width step) as a chart of two
// panels over one time axis: on top the in-flight limit of each run over the server's
// capacity, below the mean latency of each run over the service time. The capacity and
// the service time (the rows' ServiceTime; serviceTime for rows without one) are
// references (grey, dashed); each panel has a y scale of its own, since their units
// differ. Errors wrap ErrConfig.
func NewChart(title, subtitle string, step, serviceTime time.Duration, runs []Result) (chart.Chart, error) {
	if len(runs) == 0 || len(runs[0].Rows) == 0 || step <= 0 {
		return chart.Chart{}, fmt.Errorf("%w: nothing to draw", ErrConfig)
	}
	rows0 := runs[0].Rows
	for _, r := range runs {
		if len(r.Rows) != len(rows0) {
			return chart.Chart{}, fmt.Errorf("%w: runs of %d and %d rows", ErrConfig, len(rows0), len(r.Rows))
		}
	}
	limit := chart.Panel{YLabel: "in-flight limit", Series: []chart.Series{
		steps("capacity", true, step, rows0, func(r Interval) float64 { return float64(r.Capacity) }),
	}}
	latency := chart.Panel{YLabel: "mean latency (ms)", Series: []chart.Series{
		steps("service time", true, step, rows0, func(r Interval) float64 {
			if r.ServiceTime > 0 {
				return ms(r.ServiceTime)
			}
			return ms(serviceTime)
		}),
	}}
	for _, r := range runs {
		limit.Series = append(limit.Series, steps(r.Name, false, step, r.Rows, func(r Interval) float64 { return r.Limit }))
		latency.Series = append(latency.Series, steps(r.Name, false, step, r.Rows, func(r Interval) float64 { return ms(r.MeanLatency()) }))
	}
	return chart.Chart{Title: title, Subtitle: subtitle, XLabel: "time (s)", Panels: []chart.Panel{limit, latency}}, nil
}

// steps returns the step line of value over rows: row i is held over [i, i+1) steps, so
// one point starts each row and one more ends the last.
func steps(name string, reference bool, step time.Duration, rows []Interval, value func(Interval) float64) chart.Series {
	pts := make([]chart.Point, len(rows)+1)
	for i, r := range rows {
		pts[i] = chart.Point{X: float64(i) * step.Seconds(), Y: value(r)}
	}
	pts[len(rows)] = chart.Point{X: float64(len(rows)) * step.Seconds(), Y: pts[len(rows)-1].Y}
	return chart.Series{Name: name, Points: pts, Shape: chart.Step, Reference: reference}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
