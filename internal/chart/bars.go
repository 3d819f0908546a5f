package chart

import (
	"fmt"
	"io"
)

// Bar is one horizontal bar of a BarGroup.
type Bar struct {
	// Label names the bar, left of it.
	Label string
	// Value is the bar's length, relative to the longest of its group; a value that is not
	// positive draws a bar of one pixel.
	Value float64
	// Text is printed right of the bar (the value, formatted as the caller likes).
	Text string
	// Highlight draws the bar in the accent colour (ours among the peers).
	Highlight bool
}

// BarGroup is a titled group of bars sharing one scale.
type BarGroup struct {
	Title string
	Bars  []Bar
}

// Layout of a bar chart, in pixels.
const (
	barsWidth  = 760
	barsLeft   = 230 // room for the bars' labels
	barHeight  = 18
	barGap     = 4
	barsHead   = 28 // a group's title
	barMax     = barsWidth - barsLeft - 90
	barsMargin = 10
)

// WriteBars draws groups as a standalone SVG document: each group's title, then one bar
// per entry, scaled so that the group's largest value spans the width. Errors wrap
// ErrInvalid (no group, or a value that is not finite).
func WriteBars(w io.Writer, groups []BarGroup) error {
	if len(groups) == 0 {
		return fmt.Errorf("%w: no bar group", ErrInvalid)
	}
	d := Doc{Width: barsWidth, FontSize: 12}
	y := float64(barsMargin)
	for _, g := range groups {
		d.Text(barsMargin, y+16, g.Title, TextStyle{Bold: true})
		y += barsHead
		top := 0.0
		for _, b := range g.Bars {
			if !finite(b.Value) {
				return fmt.Errorf("%w: bar %q of %q has the value %v", ErrInvalid, b.Label, g.Title, b.Value)
			}
			top = max(top, b.Value)
		}
		for _, b := range g.Bars {
			bw := 0.0
			if top > 0 && b.Value > 0 {
				bw = float64(int(b.Value / top * barMax)) // whole pixels
			}
			color := "#9aa5b1"
			if b.Highlight {
				color = "#2f6fdf"
			}
			d.Text(barsLeft-6, y+barHeight-5, b.Label, TextStyle{Anchor: "end"})
			d.Rect(barsLeft, y, max(bw, 1), barHeight, color)
			d.Text(barsLeft+bw+4, y+barHeight-5, b.Text, TextStyle{})
			y += barHeight + barGap
		}
		y += 12
	}
	d.Height = int(y)
	_, err := d.WriteTo(w)
	return err
}
