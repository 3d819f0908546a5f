package adaptivesim

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Result is one simulation to draw: its name in the legend and its rows.
type Result struct {
	Name string
	Rows []Interval
}

// Layout of the SVG, in pixels: two plots, one above the other, on one time axis.
const (
	svgWidth    = 900
	svgLeft     = 72
	svgPlotW    = 600
	svgPlotH    = 200
	svgGap      = 56
	svgTop      = 70
	svgLegendX  = svgLeft + svgPlotW + 24
	svgFontSize = 13
)

var svgColours = []string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00"}
var svgDashes = []string{"", "8 4", "3 3", "12 3 3 3", "6 6"}

// WriteSVG draws runs (all with the same intervals of width step) as a standalone SVG
// document: on top the in-flight limit of each run over the server's capacity (grey,
// dashed), below the mean latency of each run over the service time (grey, dashed). It
// uses only the standard library.
//
// It is kept apart from internal/sim's charts, whose single scale does not fit two units.
func WriteSVG(w io.Writer, title, subtitle string, step, serviceTime time.Duration, runs []Result) error {
	if len(runs) == 0 || len(runs[0].Rows) == 0 || step <= 0 {
		return fmt.Errorf("%w: nothing to draw", ErrConfig)
	}
	n := len(runs[0].Rows)
	for _, r := range runs {
		if len(r.Rows) != n {
			return fmt.Errorf("%w: runs of %d and %d rows", ErrConfig, n, len(r.Rows))
		}
	}
	capacity := make([]float64, n)
	base := make([]float64, n)
	limits := make([][]float64, len(runs))
	lats := make([][]float64, len(runs))
	for i, row := range runs[0].Rows {
		capacity[i] = float64(row.Capacity)
		base[i] = ms(serviceTime)
	}
	for k, r := range runs {
		limits[k] = make([]float64, n)
		lats[k] = make([]float64, n)
		for i, row := range r.Rows {
			limits[k][i] = row.Limit
			lats[k][i] = ms(row.MeanLatency())
		}
	}
	total := float64(n) * step.Seconds()
	var b strings.Builder
	height := svgTop + 2*svgPlotH + svgGap + 60
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" font-family="Helvetica, Arial, sans-serif" font-size="%d">
<rect width="100%%" height="100%%" fill="white"/>
<text x="%d" y="24" font-size="16" font-weight="bold" text-anchor="middle">%s</text>
<text x="%d" y="46" fill="#444" text-anchor="middle">%s</text>
`, svgWidth, height, svgWidth, height, svgFontSize, svgWidth/2, esc(title), svgWidth/2, esc(subtitle))
	names := make([]string, len(runs))
	for k, r := range runs {
		names[k] = r.Name
	}
	plot(&b, svgTop, "in-flight limit", total, step.Seconds(), "capacity", capacity, names, limits)
	plot(&b, svgTop+svgPlotH+svgGap, "mean latency (ms)", total, step.Seconds(), "service time", base, names, lats)
	fmt.Fprintf(&b, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">time (s)</text>\n</svg>\n", svgLeft+svgPlotW/2, height-14)
	bw := bufio.NewWriter(w)
	bw.WriteString(b.String())
	return bw.Flush()
}

// plot draws one plot at top: the reference ref and one step line per series, with axes,
// a y label and a legend.
func plot(b *strings.Builder, top int, yLabel string, total, step float64, refName string, ref []float64, names []string, series [][]float64) {
	peak := 0.0
	for _, v := range ref {
		peak = max(peak, clean(v))
	}
	for _, s := range series {
		for _, v := range s {
			peak = max(peak, clean(v))
		}
	}
	yStep := niceStep(peak*1.05, 5)
	yMax := math.Max(yStep, math.Ceil(peak*1.05/yStep)*yStep)
	xStep := niceStep(total, 10)
	x := func(s float64) float64 { return svgLeft + s/total*svgPlotW }
	y := func(v float64) float64 { return float64(top) + svgPlotH - clean(v)/yMax*svgPlotH }
	b.WriteString(`<g stroke="#e3e3e3">` + "\n")
	for v := yStep; v <= yMax+yStep/1e6; v += yStep {
		fmt.Fprintf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>\n", svgLeft, y(v), svgLeft+svgPlotW, y(v))
	}
	b.WriteString("</g>\n<g fill=\"#222\">\n")
	for v := 0.0; v <= yMax+yStep/1e6; v += yStep {
		fmt.Fprintf(b, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", svgLeft-8, y(v)+4.5, label(v, yStep))
	}
	for s := 0.0; s <= total+xStep/1e6; s += xStep {
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n", x(s), top+svgPlotH+18, label(s, xStep))
	}
	b.WriteString("</g>\n")
	mid := float64(top) + svgPlotH/2
	fmt.Fprintf(b, "<text x=\"20\" y=\"%.1f\" transform=\"rotate(-90 20 %.1f)\" text-anchor=\"middle\">%s</text>\n", mid, mid, esc(yLabel))
	fmt.Fprintf(b, "<path d=\"M%d %d V%d H%d\" fill=\"none\" stroke=\"#222\" stroke-width=\"1.5\"/>\n", svgLeft, top, top+svgPlotH, svgLeft+svgPlotW)
	line := func(name, style string, vals []float64, k int) {
		fmt.Fprintf(b, "<path data-name=\"%s\" fill=\"none\" %s d=\"", esc(name), style)
		for i, v := range vals {
			if i == 0 {
				fmt.Fprintf(b, "M%.1f %.1f", x(0), y(v))
			} else {
				fmt.Fprintf(b, " V%.1f", y(v))
			}
			fmt.Fprintf(b, " H%.1f", x(float64(i+1)*step))
		}
		b.WriteString("\"/>\n")
		ly := float64(top + 10 + 22*k)
		fmt.Fprintf(b, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" %s/>\n", svgLegendX, ly, svgLegendX+36, ly, style)
		fmt.Fprintf(b, "<text x=\"%d\" y=\"%.1f\" fill=\"#222\">%s</text>\n", svgLegendX+44, ly+4.5, esc(name))
	}
	line(refName, `stroke="#9a9a9a" stroke-width="2.5" stroke-dasharray="2 4"`, ref, 0)
	for k, s := range series {
		style := fmt.Sprintf(`stroke="%s" stroke-width="2"`, svgColours[k%len(svgColours)])
		if d := svgDashes[k%len(svgDashes)]; d != "" {
			style += fmt.Sprintf(` stroke-dasharray="%s"`, d)
		}
		line(names[k], style, s, k+1)
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// clean maps what cannot be drawn (NaN, ±Inf, negatives) to 0.
func clean(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0
	}
	return v
}

// niceStep returns the smallest of 1, 2, 5 × 10^k that cuts [0, span] into at most ticks
// steps.
func niceStep(span float64, ticks int) float64 {
	if !(span > 0) {
		return 1
	}
	raw := span / float64(ticks)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw*(1-1e-9) {
			return m * mag
		}
	}
	return 10 * mag
}

// label prints a tick value with as many decimals as its step has.
func label(v, step float64) string {
	decimals := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	return strconv.FormatFloat(math.Round(v/step)*step, 'f', decimals, 64)
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
