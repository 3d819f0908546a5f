package sim

import (
	"fmt"
	"strings"
)

// Layout of the panels (small multiples), in pixels.
const (
	panelCols   = 2
	panelHeight = 130
	panelGapX   = 56 // room for the right panel's y tick labels
	panelGapY   = 58 // room for the x tick labels and the next panel's title
	// panelLineWidth is the width of every panel's line: alone over the reference, it needs
	// no layering.
	panelLineWidth = 2.5
)

// writePanels draws one panel per series of lines, two per row, each over refs, on the
// scales of g, with the panels' top at top, and returns the document's height. A legend
// line under the header names the reference series.
func (c Chart) writePanels(b *strings.Builder, g grid, refs, lines []Series, width, top int) int {
	// The reference's legend, centred above the panels.
	t := float64(top)
	var legend []string
	for _, r := range refs {
		legend = append(legend, r.Name)
	}
	if len(refs) > 0 {
		label := strings.Join(legend, ", ") + " (in every panel)"
		lw := legendSample + 8 + textWidth(label, fontSize, false)
		lx := (float64(width) - lw) / 2
		fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" %s/>\n", lx, t-4, lx+legendSample, t-4, seriesStyle(refs[0], 0, 0))
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#222\">%s</text>\n", lx+legendSample+8, t+0.5, esc(label))
		t += 30
	}
	panelW := (float64(width) - plotLeft - svgMargin - panelGapX*(panelCols-1)) / panelCols
	rows := (len(lines) + panelCols - 1) / panelCols
	for k, s := range lines {
		row, col := k/panelCols, k%panelCols
		f := g.frame(plotLeft+float64(col)*(panelW+panelGapX), t+float64(row)*(panelHeight+panelGapY), panelW, panelHeight)
		style := seriesStyle(s, k, panelLineWidth)
		fmt.Fprintf(b, "<g data-panel=\"%s\">\n", esc(s.Name))
		f.axes(b, true)
		// The panel's title is its series' name, next to a sample of its line.
		fmt.Fprintf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" %s/>\n", f.left, f.top-12, f.left+legendSample, f.top-12, style)
		fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\" fill=\"#222\">%s</text>\n", f.left+legendSample+8, f.top-7.5, esc(s.Name))
		b.WriteString(`<g fill="none" stroke-linejoin="round" stroke-linecap="butt">` + "\n")
		for _, r := range refs {
			f.path(b, r, seriesStyle(r, 0, 0))
		}
		f.path(b, s, style)
		b.WriteString("</g>\n</g>\n")
	}
	bottom := t + float64(rows)*panelHeight + float64(rows-1)*panelGapY
	fmt.Fprintf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time (s)</text>\n", float64(plotLeft+width-svgMargin)/2, bottom+44)
	yLabel(b, c.YLabel, (t+bottom)/2)
	return int(bottom) + xAxisRoom
}
