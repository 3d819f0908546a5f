package chart

import (
	"errors"
	"fmt"
	"io"
	"math"
)

// ErrInvalid reports a chart that cannot be drawn: no panel, a panel without series, a
// series without points, a value that is not finite, or an x range of zero width.
var ErrInvalid = errors.New("chart: invalid chart")

// Shape is how a series joins its points.
type Shape int

const (
	// Line joins the points with straight segments.
	Line Shape = iota
	// Step holds each point's Y until the next point's X, then jumps: the shape of a count
	// per interval, or of a setting that changes at instants. The last point only ends the
	// line.
	Step
)

// Series is one line of a chart.
type Series struct {
	// Name labels the line in the legend (or its panel's heading).
	Name string
	// Points are drawn in order; X should not decrease.
	Points []Point
	// Shape joins the points; the zero Shape is Line.
	Shape Shape
	// Reference draws the series as the backdrop of the others: grey and dashed. A
	// reference that every panel of a grid holds is named once, above the grid.
	Reference bool
}

// Panel is one plot of a chart.
type Panel struct {
	// YLabel gives the panel a y scale and a label of its own. Panels without one share
	// the Chart's YLabel and one y scale, so that they can be compared at a glance.
	YLabel string
	// Series are drawn in order, later ones on top.
	Series []Series
}

// Chart is one or more panels over a shared x axis. One panel is drawn 608×332 pixels
// with a legend on its right; several in a grid of Columns panels a row, each 130 pixels
// high and headed by the names of its series, in a document 880 pixels wide.
type Chart struct {
	// Title and Subtitle head the chart, wrapped to its width; either may be empty.
	Title, Subtitle string
	// XLabel names the x axis, YLabel the y axis of the panels without a YLabel.
	XLabel, YLabel string
	// Panels are laid out left to right, then top to bottom.
	Panels []Panel
	// Columns is the number of panels a row; 0 means 1.
	Columns int
}

// Layout of the document, in pixels. The header (title and subtitle, wrapped to the
// width) and the legend's width decide the size of the document; a plot's size is fixed.
const (
	docMinWidth  = 880
	margin       = 16  // left and right of the header, right of the legend or the grid
	plotLeft     = 72  // room for the y tick labels and the y-axis label
	plotWidth    = 608 // of a chart with one panel
	plotHeight   = 332
	plotGap      = 18 // between the header and the plots
	xAxisRoom    = 64 // below the plots: tick labels and the x-axis label
	yLabelOffset = 52 // from a plot's left edge to its y-axis label
	legendGap    = 20 // between the plot and the legend
	legendSample = 44 // length of a legend's line sample: the longest dash pattern fits
	legendPitch  = 24 // vertical distance between two legend entries
	titleSize    = 16 // bold
	lineHeight   = 1.35
	yTicks       = 6
	xTicks       = 10
)

// palette colours the non-reference series in order: colour-blind friendly (Okabe–Ito,
// then two more), dark enough on white.
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#8C564B"}

// dashes gives the non-reference series in order a dash pattern of their own, so that lines
// lying on top of each other stay distinguishable (and the chart readable in grey).
var dashes = []string{"", "10 4", "3 3", "12 3 3 3", "6 6", "2 3", "16 4 4 4 4 4", "8 2"}

// referenceStroke draws every reference series.
var referenceStroke = Stroke{Color: "#9a9a9a", Width: 2.5, Dash: "2 4"}

// WriteSVG draws c as a standalone SVG document. Each series is one <path> with its name in
// a data-name attribute; the non-reference series get a colour and dash pattern each, by
// name, in order of first appearance, the same in every panel. Errors wrap ErrInvalid.
func (c Chart) WriteSVG(w io.Writer) error {
	if err := c.check(); err != nil {
		return err
	}
	var d Doc
	if len(c.Panels) == 1 {
		c.single(&d)
	} else {
		c.grid(&d)
	}
	_, err := d.WriteTo(w)
	return err
}

// check reports a chart that cannot be drawn.
func (c Chart) check() error {
	if len(c.Panels) == 0 {
		return fmt.Errorf("%w: no panel", ErrInvalid)
	}
	for i, p := range c.Panels {
		if len(p.Series) == 0 {
			return fmt.Errorf("%w: panel %d has no series", ErrInvalid, i)
		}
		for _, s := range p.Series {
			if len(s.Points) == 0 {
				return fmt.Errorf("%w: series %q has no points", ErrInvalid, s.Name)
			}
			for _, pt := range s.Points {
				if !finite(pt.X) || !finite(pt.Y) {
					return fmt.Errorf("%w: series %q has the point (%v, %v)", ErrInvalid, s.Name, pt.X, pt.Y)
				}
			}
		}
	}
	if x := c.xScale(); !(x.hi > x.lo) {
		return fmt.Errorf("%w: the x values span nothing", ErrInvalid)
	}
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// xScale is the x axis every panel shares.
func (c Chart) xScale() scale {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range c.Panels {
		for _, s := range p.Series {
			for _, pt := range s.Points {
				lo, hi = math.Min(lo, pt.X), math.Max(hi, pt.X)
			}
		}
	}
	return newScale(lo, hi, xTicks, false)
}

// yScale returns the y axis of panel i: its own if it has a YLabel, else the one the
// panels without a YLabel share.
func (c Chart) yScale(i int) scale {
	lo, hi := math.Inf(1), math.Inf(-1)
	own := c.Panels[i].YLabel != ""
	for j, p := range c.Panels {
		if own && j != i || !own && p.YLabel != "" {
			continue
		}
		for _, s := range p.Series {
			for _, pt := range s.Points {
				lo, hi = math.Min(lo, pt.Y), math.Max(hi, pt.Y)
			}
		}
	}
	return newScale(lo, hi, yTicks, true)
}

// header draws the title and subtitle, wrapped to the document's width and centred, and
// returns the y of their bottom.
func (c Chart) header(d *Doc) int {
	textMax := float64(d.Width - 2*margin)
	y, mid := 0.0, float64(d.Width)/2
	for _, l := range wrapText(c.Title, textMax, titleSize, true) {
		y += titleSize * lineHeight
		d.Text(mid, y+4, l, TextStyle{Size: titleSize, Bold: true, Anchor: "middle"})
	}
	for _, l := range wrapText(c.Subtitle, textMax, FontSize, false) {
		y += FontSize * lineHeight
		d.Text(mid, y+4, l, TextStyle{Fill: "#444", Anchor: "middle"})
	}
	return int(math.Ceil(y))
}

// styles returns the stroke of every non-reference series by name: a colour and a dash
// pattern each, in order of first appearance.
func (c Chart) styles() map[string]Stroke {
	st := map[string]Stroke{}
	for _, p := range c.Panels {
		for _, s := range p.Series {
			if _, seen := st[s.Name]; !seen && !s.Reference {
				k := len(st)
				st[s.Name] = Stroke{Color: palette[k%len(palette)], Dash: dashes[k%len(dashes)]}
			}
		}
	}
	return st
}

// layeredWidth is the width of the k-th of m series sharing one plot: it shrinks from the
// first to the last, so that coinciding lines, drawn in order, each lie inside the wider
// ones below, which stay visible as its edges.
func layeredWidth(k, m int) float64 {
	return 2 + 0.75*float64(max(0, m-1-k))
}

// strokes returns the stroke of each series of p: the references', or the series' style
// at its layered width (2.5 for a series alone over references: it needs no layering).
func strokes(p Panel, styles map[string]Stroke) []Stroke {
	m := 0
	for _, s := range p.Series {
		if !s.Reference {
			m++
		}
	}
	out := make([]Stroke, len(p.Series))
	k := 0
	for i, s := range p.Series {
		if s.Reference {
			out[i] = referenceStroke
			continue
		}
		out[i] = styles[s.Name]
		out[i].Width = layeredWidth(k, m)
		k++
	}
	return out
}
