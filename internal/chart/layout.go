package chart

import (
	"math"
	"slices"
	"strings"
)

// Layout of a grid of panels, in pixels.
const (
	panelHeight = 130
	panelGapX   = 56 // room for the right panel's y tick labels
	panelGapY   = 58 // room for the x tick labels and the next panel's heading
	// panelLabelRoom widens the gap between columns for panels with a y label of their own.
	panelLabelRoom = 24
	// soloWidth is the width of a panel's only non-reference line in a grid.
	soloWidth = 2.5
)

// frame is one plot area: the panel's scales placed on its pixels.
type frame struct {
	x, y            scale
	left, top, w, h float64
	lineStyles      []Stroke
	series          []Series
}

func (c Chart) frame(i int, left, top, w, h float64, st []Stroke) frame {
	return frame{
		x: c.xScale().at(left, w, false), y: c.yScale(i).at(top, h, true),
		left: left, top: top, w: w, h: h, lineStyles: st, series: c.Panels[i].Series,
	}
}

// single draws a chart of one panel with its legend on the right.
func (c Chart) single(d *Doc) {
	p := c.Panels[0]
	nameWidth := 0.0
	for _, s := range p.Series {
		nameWidth = max(nameWidth, TextWidth(s.Name, FontSize, false))
	}
	d.Width = max(docMinWidth, int(math.Ceil(plotLeft+plotWidth+legendGap+legendSample+8+nameWidth))+margin)
	top := c.header(d) + plotGap + 8
	f := c.frame(0, plotLeft, float64(top), plotWidth, plotHeight, strokes(p, c.styles()))
	f.axes(d)
	c.labels(d, 0, f, f.left+f.w/2)
	d.Group(Attr{"fill", "none"}, Attr{"stroke-linejoin", "round"}, Attr{"stroke-linecap", "butt"})
	f.lines(d)
	legendLeft := f.left + f.w + legendGap
	for i, s := range p.Series {
		ey := f.top + 8 + legendPitch*float64(i)
		d.Line(legendLeft, ey, legendLeft+legendSample, ey, f.lineStyles[i])
		d.Text(legendLeft+legendSample+8, ey+4.5, s.Name, TextStyle{Fill: "#222"})
	}
	d.End()
	d.Height = top + plotHeight + xAxisRoom
}

// grid draws a chart of several panels, Columns a row, each headed by its series' names
// (but for the references all panels hold, named once above the grid).
func (c Chart) grid(d *Doc) {
	d.Width = docMinWidth
	t := float64(c.header(d) + plotGap + 8)
	common := c.commonReferences()
	if len(common) > 0 {
		label := strings.Join(common, ", ") + " (in every panel)"
		lw := legendSample + 8 + TextWidth(label, FontSize, false)
		lx := (float64(d.Width) - lw) / 2
		d.Line(lx, t-4, lx+legendSample, t-4, referenceStroke)
		d.Text(lx+legendSample+8, t+0.5, label, TextStyle{Fill: "#222"})
		t += 30
	}
	cols := max(1, c.Columns)
	gapX := float64(panelGapX)
	for _, p := range c.Panels {
		if p.YLabel != "" && cols > 1 {
			gapX += panelLabelRoom
			break
		}
	}
	panelW := (float64(d.Width) - plotLeft - margin - gapX*float64(cols-1)) / float64(cols)
	rows := (len(c.Panels) + cols - 1) / cols
	styles := c.styles()
	for i, p := range c.Panels {
		row, col := i/cols, i%cols
		st := strokes(p, styles)
		if alone(p) {
			for k, s := range p.Series {
				if !s.Reference {
					st[k].Width = soloWidth
				}
			}
		}
		f := c.frame(i, plotLeft+float64(col)*(panelW+gapX), t+float64(row)*(panelHeight+panelGapY), panelW, panelHeight, st)
		d.Group(Attr{"data-panel", panelName(p, common)})
		f.axes(d)
		if p.YLabel != "" {
			d.Text(f.left-yLabelOffset, f.top+f.h/2, p.YLabel, TextStyle{Anchor: "middle", Vertical: true})
		}
		// The heading: a sample of each line the common legend does not name, and its name.
		x := f.left
		for k, s := range p.Series {
			if s.Reference && slices.Contains(common, s.Name) {
				continue
			}
			d.Line(x, f.top-12, x+legendSample, f.top-12, st[k])
			d.Text(x+legendSample+8, f.top-7.5, s.Name, TextStyle{Bold: true, Fill: "#222"})
			x += legendSample + 8 + TextWidth(s.Name, FontSize, true) + legendGap
		}
		d.Group(Attr{"fill", "none"}, Attr{"stroke-linejoin", "round"}, Attr{"stroke-linecap", "butt"})
		f.lines(d)
		d.End()
		d.End()
	}
	bottom := t + float64(rows)*panelHeight + float64(rows-1)*panelGapY
	if c.XLabel != "" {
		d.Text(float64(plotLeft+d.Width-margin)/2, bottom+44, c.XLabel, TextStyle{Anchor: "middle"})
	}
	if c.YLabel != "" {
		d.Text(plotLeft-yLabelOffset, (t+bottom)/2, c.YLabel, TextStyle{Anchor: "middle", Vertical: true})
	}
	d.Height = int(bottom) + xAxisRoom
}

// labels draws the axis labels of a chart of one panel: the x label centred on x.
func (c Chart) labels(d *Doc, i int, f frame, x float64) {
	if c.XLabel != "" {
		d.Text(x, f.top+f.h+44, c.XLabel, TextStyle{Anchor: "middle"})
	}
	label := c.Panels[i].YLabel
	if label == "" {
		label = c.YLabel
	}
	if label != "" {
		d.Text(f.left-yLabelOffset, f.top+f.h/2, label, TextStyle{Anchor: "middle", Vertical: true})
	}
}

// commonReferences returns the names of the references every panel holds, in the order of
// the first panel.
func (c Chart) commonReferences() []string {
	var names []string
	for _, s := range c.Panels[0].Series {
		if !s.Reference {
			continue
		}
		all := true
		for _, p := range c.Panels[1:] {
			all = all && slices.ContainsFunc(p.Series, func(o Series) bool { return o.Reference && o.Name == s.Name })
		}
		if all && !slices.Contains(names, s.Name) {
			names = append(names, s.Name)
		}
	}
	return names
}

// alone reports whether p has a single non-reference series.
func alone(p Panel) bool {
	n := 0
	for _, s := range p.Series {
		if !s.Reference {
			n++
		}
	}
	return n == 1
}

// panelName labels a panel's group: the names of its series but the common references.
func panelName(p Panel, common []string) string {
	var names []string
	for _, s := range p.Series {
		if !(s.Reference && slices.Contains(common, s.Name)) {
			names = append(names, s.Name)
		}
	}
	return strings.Join(names, ", ")
}

// axes draws the grid lines, the tick labels and the axes.
func (f frame) axes(d *Doc) {
	right, bottom := f.left+f.w, f.top+f.h
	d.Group(Attr{"stroke", "#e3e3e3"}, Attr{"stroke-width", "1"})
	f.y.ticks(false, func(v float64) { d.Line(f.left, f.y.px(v), right, f.y.px(v), Stroke{}) })
	f.x.ticks(false, func(v float64) { d.Line(f.x.px(v), f.top, f.x.px(v), bottom, Stroke{}) })
	d.End()
	d.Group(Attr{"fill", "#222"})
	f.y.ticks(true, func(v float64) {
		d.Text(f.left-8, f.y.px(v)+4.5, tickLabel(v, f.y.step), TextStyle{Anchor: "end"})
	})
	f.x.ticks(true, func(v float64) {
		d.Text(f.x.px(v), bottom+20, tickLabel(v, f.x.step), TextStyle{Anchor: "middle"})
	})
	d.End()
	d.Path("", "M"+num(f.left)+" "+num(f.top)+" V"+num(bottom)+" H"+num(right), Stroke{Color: "#222", Width: 1.5})
}

// lines draws the frame's series.
func (f frame) lines(d *Doc) {
	for i, s := range f.series {
		d.Path(s.Name, f.path(s), f.lineStyles[i])
	}
}

// path returns the SVG path data of s. A step line holds each value over its whole
// interval (one H a point, a V where the value changes), since it counts what happened
// during that interval: a line between midpoints would draw triangles.
func (f frame) path(s Series) string {
	var b strings.Builder
	prev := math.NaN()
	for i, pt := range s.Points {
		x, y := f.x.px(pt.X), f.y.px(pt.Y)
		switch {
		case i == 0:
			b.WriteString("M" + num(x) + " " + num(y))
		case s.Shape == Step:
			b.WriteString(" H" + num(x))
			if y != prev && i < len(s.Points)-1 {
				b.WriteString(" V" + num(y))
			}
		default:
			b.WriteString(" L" + num(x) + " " + num(y))
		}
		prev = y
	}
	return b.String()
}
