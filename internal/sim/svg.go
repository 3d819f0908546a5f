package sim

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Layout of the SVG, in pixels. The header (title and subtitle, wrapped to the width) and
// the legend's width decide the size of the document; the plot area is always the same.
const (
	svgMinWidth  = 880
	svgMargin    = 16  // left and right of the header, right of the legend
	plotLeft     = 72  // room for the y tick labels and the y-axis label
	plotWidth    = 608 // of the one plot
	plotHeight   = 332
	plotGap      = 18 // between the header and the plot
	xAxisRoom    = 64 // below the plot: tick labels and the x-axis label
	legendGap    = 20 // between the plot and the legend
	legendSample = 44 // length of a legend's line sample: the longest dash pattern fits
	legendPitch  = 24 // vertical distance between two legend entries
	fontSize     = 13 // of everything but the title
	titleSize    = 16 // bold
	lineHeight   = 1.35
)

// palette colours the non-reference series in order: colour-blind friendly (Okabe–Ito,
// then two more), dark enough on white.
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#8C564B"}

// dashes gives the non-reference series in order a dash pattern of their own, so that lines
// lying on top of each other stay distinguishable (and the chart readable in grey).
var dashes = []string{"", "10 4", "3 3", "12 3 3 3", "6 6", "2 3", "16 4 4 4 4 4", "8 2"}

// panelsFrom is the number of non-reference series from which WriteSVG draws one panel per
// series instead of one plot: algorithms often admit the same counts, and more than three
// coinciding lines cannot be told apart, whatever their colours and dashes.
const panelsFrom = 4

// WriteSVG draws c as a standalone SVG 1.1 document with axes, ticks, grid lines and a
// title. Each series is one <path>, a step line holding each value over its whole step (one
// H command per value), carrying the series name in a data-name attribute and a colour and
// dash pattern of its own. Up to three series besides the reference share one plot with a
// legend; from four on, each gets a panel of its own, titled with its name, over the
// reference series, all panels on the same scales. The title and subtitle wrap to the
// document's width. Text is XML-escaped. It uses only the standard library.
func (c Chart) WriteSVG(w io.Writer) error {
	if err := c.check(); err != nil {
		return err
	}
	var refs, lines []Series
	for _, s := range c.Series {
		if s.Reference {
			refs = append(refs, s)
		} else {
			lines = append(lines, s)
		}
	}
	width := svgMinWidth
	panels := len(lines) >= panelsFrom
	if !panels { // the legend's longest name may widen the document
		nameWidth := 0.0
		for _, s := range c.Series {
			nameWidth = max(nameWidth, textWidth(s.Name, fontSize, false))
		}
		width = max(width, int(math.Ceil(plotLeft+plotWidth+legendGap+legendSample+8+nameWidth))+svgMargin)
	}
	head, headBottom := c.header(width)
	top := headBottom + plotGap + 8

	n := len(c.Series[0].Values)
	g := grid{total: float64(n) * c.Step.Seconds(), step: c.Step.Seconds()}
	g.yStep = niceStep(c.peak(), 6)
	g.yMax = math.Max(g.yStep, math.Ceil(c.peak()/g.yStep)*g.yStep)
	g.xStep = niceStep(g.total, 10)

	var body strings.Builder
	var height int
	if panels {
		height = c.writePanels(&body, g, refs, lines, width, top)
	} else {
		f := g.frame(plotLeft, float64(top), plotWidth, plotHeight)
		f.axes(&body, true)
		fmt.Fprintf(&body, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time (s)</text>\n", f.left+f.w/2, f.top+f.h+44)
		yLabel(&body, c.YLabel, f.top+f.h/2)
		body.WriteString(`<g fill="none" stroke-linejoin="round" stroke-linecap="butt">` + "\n")
		legend := &strings.Builder{}
		legendLeft := f.left + f.w + legendGap
		k := 0
		for i, s := range c.Series {
			style := seriesStyle(s, k, layeredWidth(k, len(lines)))
			if !s.Reference {
				k++
			}
			f.path(&body, s, style)
			ey := f.top + 8 + legendPitch*float64(i)
			fmt.Fprintf(legend, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" %s/>\n", legendLeft, ey, legendLeft+legendSample, ey, style)
			fmt.Fprintf(legend, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#222\" stroke=\"none\">%s</text>\n", legendLeft+legendSample+8, ey+4.5, esc(s.Name))
		}
		body.WriteString(legend.String())
		body.WriteString("</g>\n")
		height = top + plotHeight + xAxisRoom
	}

	b := bufio.NewWriter(w)
	fmt.Fprintf(b, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="%d">
<rect width="100%%" height="100%%" fill="white"/>
`, width, height, width, height, fontSize)
	b.WriteString(head)
	b.WriteString(body.String())
	b.WriteString("</svg>\n")
	return b.Flush()
}

// header returns the title and subtitle lines, wrapped to width and centred, and the y
// of their bottom.
func (c Chart) header(width int) (string, int) {
	textMax := float64(width - 2*svgMargin)
	var head strings.Builder
	y, mid := 0.0, float64(width)/2
	for _, l := range wrapText(c.Title, textMax, titleSize, true) {
		y += titleSize * lineHeight
		fmt.Fprintf(&head, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%d\" font-weight=\"bold\" text-anchor=\"middle\">%s</text>\n", mid, y+4, titleSize, esc(l))
	}
	for _, l := range wrapText(c.Subtitle, textMax, fontSize, false) {
		y += fontSize * lineHeight
		fmt.Fprintf(&head, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#444\" text-anchor=\"middle\">%s</text>\n", mid, y+4, esc(l))
	}
	return head.String(), int(math.Ceil(y))
}

// yLabel writes the y-axis label, rotated, centred on y.
func yLabel(b *strings.Builder, label string, y float64) {
	fmt.Fprintf(b, "<text x=\"20\" y=\"%.1f\" transform=\"rotate(-90 20 %.1f)\" text-anchor=\"middle\">%s</text>\n", y, y, esc(label))
}

// grid holds the scales every plot of a chart shares.
type grid struct {
	total, step  float64 // seconds: the chart's span and one value's
	xStep, yStep float64 // between ticks
	yMax         float64
}

// frame is one plot area of a chart, in pixels.
type frame struct {
	grid
	left, top, w, h float64
}

func (g grid) frame(left, top, w, h float64) frame {
	return frame{grid: g, left: left, top: top, w: w, h: h}
}

func (f frame) x(sec float64) float64 { return f.left + sec/f.total*f.w }
func (f frame) y(v float64) float64   { return f.top + f.h - v/f.yMax*f.h }

// axes writes the grid lines, the tick labels (the x ones only if xLabels) and the axes.
func (f frame) axes(b *strings.Builder, xLabels bool) {
	right, bottom := f.left+f.w, f.top+f.h
	b.WriteString(`<g stroke="#e3e3e3" stroke-width="1">` + "\n")
	for v := f.yStep; v <= f.yMax+f.yStep/1e6; v += f.yStep {
		fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", f.left, f.y(v), right, f.y(v))
	}
	for s := f.xStep; s <= f.total+f.xStep/1e6; s += f.xStep {
		fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", f.x(s), f.top, f.x(s), bottom)
	}
	b.WriteString("</g>\n<g fill=\"#222\">\n")
	for v := 0.0; v <= f.yMax+f.yStep/1e6; v += f.yStep {
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", f.left-8, f.y(v)+4.5, tickLabel(v, f.yStep))
	}
	if xLabels {
		for s := 0.0; s <= f.total+f.xStep/1e6; s += f.xStep {
			fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", f.x(s), bottom+20, tickLabel(s, f.xStep))
		}
	}
	b.WriteString("</g>\n")
	fmt.Fprintf(b, "<path d=\"M%.1f %.1f V%.1f H%.1f\" fill=\"none\" stroke=\"#222\" stroke-width=\"1.5\"/>\n", f.left, f.top, bottom, right)
}

// path writes s as a step line: each value is held over its whole step, since it counts
// what happened during that interval (a line between midpoints would draw triangles).
func (f frame) path(b *strings.Builder, s Series, style string) {
	fmt.Fprintf(b, "<path data-name=\"%s\" %s d=\"", esc(s.Name), style)
	prev := math.NaN()
	for j, v := range s.Values {
		yv := f.y(clean(v))
		switch {
		case j == 0:
			fmt.Fprintf(b, "M%.1f %.1f", f.x(0), yv)
		case yv != prev:
			fmt.Fprintf(b, " V%.1f", yv)
		}
		fmt.Fprintf(b, " H%.1f", f.x(float64(j+1)*f.step))
		prev = yv
	}
	b.WriteString("\"/>\n")
}

// textWidth estimates the width in pixels of s set in a sans-serif font of size px,
// generously (DejaVu Sans, a common fallback for Helvetica, is wide), so that wrapped text
// fits whatever font renders it.
func textWidth(s string, size float64, bold bool) float64 {
	em := 0.0
	for _, r := range s {
		switch {
		case strings.ContainsRune("iljtfrI.,;:|!'()[] ", r):
			em += 0.36
		case strings.ContainsRune("mwMW", r):
			em += 0.92
		case r >= 'A' && r <= 'Z':
			em += 0.72
		default:
			em += 0.62
		}
	}
	if bold {
		em *= 1.1
	}
	return em * size
}

// wrapText breaks s at spaces into lines no wider than width (by textWidth); a word wider
// than width gets a line of its own. An empty s has no line.
func wrapText(s string, width, size float64, bold bool) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(s) {
		if line != "" && textWidth(line+" "+word, size, bold) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += word
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// seriesStyle returns the stroke attributes of s, the k-th non-reference series: a colour
// and a dash pattern of its own, and the given width.
func seriesStyle(s Series, k int, width float64) string {
	if s.Reference {
		return `stroke="#9a9a9a" stroke-width="2.5" stroke-dasharray="2 4"`
	}
	st := fmt.Sprintf(`stroke="%s" stroke-width="%.2g"`, palette[k%len(palette)], width)
	if d := dashes[k%len(dashes)]; d != "" {
		st += fmt.Sprintf(` stroke-dasharray="%s"`, d)
	}
	return st
}

// layeredWidth is the width of the k-th of m series sharing one plot: it shrinks from the
// first to the last, so that coinciding lines (algorithms often admit the same counts),
// drawn in order, each lie inside the wider ones below, which stay visible as its edges.
func layeredWidth(k, m int) float64 {
	return 2 + 0.75*float64(max(0, m-1-k))
}

// tickLabel prints a tick value with as many decimals as the step has, so that the float
// noise summing steps accumulates never shows.
func tickLabel(v, step float64) string {
	decimals := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	return strconv.FormatFloat(math.Round(v/step)*step, 'f', decimals, 64)
}

// esc escapes s for XML text and attribute values.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder never fails
	return b.String()
}
