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

// Layout of the SVG, in pixels.
const (
	svgWidth   = 880
	svgHeight  = 460
	plotLeft   = 72
	plotRight  = 680
	plotTop    = 64
	plotBottom = 396
	legendLeft = 700
)

// palette colours the non-reference series in order: colour-blind friendly (Okabe–Ito,
// then two more), dark enough on white.
var palette = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#8C564B"}

// dashes gives the non-reference series in order a dash pattern of their own, so that lines
// lying on top of each other stay distinguishable (and the chart readable in grey).
var dashes = []string{"", "10 4", "3 3", "12 3 3 3", "6 6", "1 4", "16 4 4 4 4 4", "8 2"}

// WriteSVG draws c as a standalone SVG 1.1 document with axes, ticks, grid lines, a title
// and a legend: one <polyline> per series, with one point per value, carrying the series
// name in a data-name attribute. Text is XML-escaped. It uses only the standard library.
func (c Chart) WriteSVG(w io.Writer) error {
	if err := c.check(); err != nil {
		return err
	}
	b := bufio.NewWriter(w)
	n := len(c.Series[0].Values)
	total := float64(n) * c.Step.Seconds()
	yStep := niceStep(c.peak(), 6)
	yMax := math.Max(yStep, math.Ceil(c.peak()/yStep)*yStep)
	xStep := niceStep(total, 10)
	x := func(sec float64) float64 { return plotLeft + sec/total*(plotRight-plotLeft) }
	y := func(v float64) float64 { return plotBottom - v/yMax*(plotBottom-plotTop) }

	fmt.Fprintf(b, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="13">
<rect width="100%%" height="100%%" fill="white"/>
`, svgWidth, svgHeight, svgWidth, svgHeight)
	mid := float64(plotLeft+plotRight) / 2
	if c.Title != "" {
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"26\" font-size=\"16\" font-weight=\"bold\" text-anchor=\"middle\">%s</text>\n", mid, esc(c.Title))
	}
	if c.Subtitle != "" {
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"46\" fill=\"#444\" text-anchor=\"middle\">%s</text>\n", mid, esc(c.Subtitle))
	}

	// Grid, ticks and tick labels.
	b.WriteString(`<g stroke="#e3e3e3" stroke-width="1">` + "\n")
	for v := yStep; v <= yMax+yStep/1e6; v += yStep {
		fmt.Fprintf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", plotLeft, y(v), plotRight, y(v))
	}
	for s := xStep; s <= total+xStep/1e6; s += xStep {
		fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n", x(s), plotTop, x(s), plotBottom)
	}
	b.WriteString("</g>\n<g fill=\"#222\">\n")
	for v := 0.0; v <= yMax+yStep/1e6; v += yStep {
		fmt.Fprintf(b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", plotLeft-8, y(v)+4.5, tickLabel(v, yStep))
	}
	for s := 0.0; s <= total+xStep/1e6; s += xStep {
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x(s), plotBottom+20, tickLabel(s, xStep))
	}
	b.WriteString("</g>\n")
	fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">time (s)</text>\n", mid, plotBottom+44)
	ly := float64(plotTop+plotBottom) / 2
	fmt.Fprintf(b, "<text x=\"20\" y=\"%.1f\" transform=\"rotate(-90 20 %.1f)\" text-anchor=\"middle\">%s</text>\n", ly, ly, esc(c.YLabel))
	fmt.Fprintf(b, "<path d=\"M%d %d V%d H%d\" fill=\"none\" stroke=\"#222\" stroke-width=\"1.5\"/>\n", plotLeft, plotTop, plotBottom, plotRight)

	// Series, then the legend.
	b.WriteString(`<g fill="none" stroke-linejoin="round" stroke-linecap="round">` + "\n")
	legend := &strings.Builder{}
	k, m := 0, 0
	for _, s := range c.Series {
		if !s.Reference {
			m++
		}
	}
	for i, s := range c.Series {
		style := seriesStyle(s, k, m)
		if !s.Reference {
			k++
		}
		fmt.Fprintf(b, "<polyline data-name=\"%s\" %s points=\"", esc(s.Name), style)
		for j, v := range s.Values {
			if j > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(b, "%.1f,%.1f", x((float64(j)+0.5)*c.Step.Seconds()), y(clean(v)))
		}
		b.WriteString("\"/>\n")
		ey := float64(plotTop + 8 + 24*i)
		fmt.Fprintf(legend, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" %s/>\n", legendLeft, ey, legendLeft+34, ey, style)
		fmt.Fprintf(legend, "<text x=\"%d\" y=\"%.1f\" fill=\"#222\" stroke=\"none\">%s</text>\n", legendLeft+42, ey+4.5, esc(s.Name))
	}
	b.WriteString(legend.String())
	b.WriteString("</g>\n</svg>\n")
	return b.Flush()
}

// seriesStyle returns the stroke attributes of s, the k-th of m non-reference series.
// Earlier series are drawn wider, so a later one lying on top of them leaves them visible.
func seriesStyle(s Series, k, m int) string {
	if s.Reference {
		return `stroke="#9a9a9a" stroke-width="2.5" stroke-dasharray="2 4"`
	}
	st := fmt.Sprintf(`stroke="%s" stroke-width="%.1f" stroke-opacity="0.9"`,
		palette[k%len(palette)], 2+0.8*float64(max(0, m-1-k)))
	if d := dashes[k%len(dashes)]; d != "" {
		st += fmt.Sprintf(` stroke-dasharray="%s"`, d)
	}
	return st
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
