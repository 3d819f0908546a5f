package sim

import (
	"io"

	"github.com/ratekit/limiter/internal/chart"
)

// panelsFrom is the number of non-reference series from which WriteSVG draws one panel per
// series instead of one plot: algorithms often admit the same counts, and more than three
// coinciding lines cannot be told apart, whatever their colours and dashes.
const panelsFrom = 4

// WriteSVG draws c as a standalone SVG 1.1 document (see package chart) with axes, ticks,
// grid lines and a title. Each series is one <path>, a step line holding each value over
// its whole step (one H command per value), carrying the series name in a data-name
// attribute and a colour and dash pattern of its own. Up to three series besides the
// reference share one plot with a legend; from four on, each gets a panel of its own,
// titled with its name, over the reference series, all panels on the same scales, two a
// row. A Separate series gets a panel of its own, on its own scale, after the others.
// The title and subtitle wrap to the document's width. Text is XML-escaped.
func (c Chart) WriteSVG(w io.Writer) error {
	if err := c.check(); err != nil {
		return err
	}
	step := c.Step.Seconds()
	var all, refs, lines, separate []chart.Series
	for _, s := range c.Series {
		// Value i is held over [i, i+1) steps: one point at the start of each step, and
		// one more to end the last.
		pts := make([]chart.Point, len(s.Values)+1)
		for i, v := range s.Values {
			pts[i] = chart.Point{X: float64(i) * step, Y: clean(v)}
		}
		pts[len(s.Values)] = chart.Point{X: float64(len(s.Values)) * step, Y: pts[len(s.Values)-1].Y}
		cs := chart.Series{Name: s.Name, Points: pts, Shape: chart.Step, Reference: s.Reference}
		if s.Separate {
			separate = append(separate, cs)
			continue
		}
		all = append(all, cs)
		if s.Reference {
			refs = append(refs, cs)
		} else {
			lines = append(lines, cs)
		}
	}
	out := chart.Chart{Title: c.Title, Subtitle: c.Subtitle, XLabel: "time (s)", YLabel: c.YLabel}
	if len(lines) < panelsFrom {
		out.Panels = []chart.Panel{{Series: all}}
	} else {
		out.Columns = 2
		for _, l := range lines {
			out.Panels = append(out.Panels, chart.Panel{Series: append(refs[:len(refs):len(refs)], l)})
		}
	}
	for _, s := range separate {
		// On a scale of its own, below the others.
		out.Panels = append(out.Panels, chart.Panel{YLabel: s.Name + " per " + FormatDuration(c.Step), Series: []chart.Series{s}})
	}
	return out.WriteSVG(w)
}
