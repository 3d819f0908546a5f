package chart

import (
	"bufio"
	"cmp"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// FontSize is the size in pixels of a Chart's text, and of a Doc's unless its FontSize or a
// TextStyle says otherwise.
const FontSize = 13

// fontFamily is every document's: DejaVu Sans, which TextWidth is calibrated on, stands in
// for Helvetica where it is missing.
const fontFamily = "Helvetica, Arial, sans-serif"

// Doc is an SVG 1.1 document being assembled: elements are appended in drawing order (later
// ones on top), and WriteTo writes them under a white background at the document's size,
// which may be set after the elements (a layout knows its height last). Coordinates are in
// pixels, printed with one decimal. The zero Doc is empty and ready to use.
type Doc struct {
	// Width and Height are the size of the document, in pixels.
	Width, Height int
	// FontSize is the size in pixels of the text without a TextStyle.Size; 0 means
	// FontSize.
	FontSize int
	b        strings.Builder
}

// Point is a position: pixels in a Doc, data units in a Series.
type Point struct{ X, Y float64 }

// Stroke is how a line is drawn: its colour, its width in pixels and an SVG dash pattern
// ("" for a solid line). The zero Stroke sets nothing: the line inherits from its group.
type Stroke struct {
	Color string
	Width float64
	Dash  string
}

// attrs returns the SVG attributes of s, each after a space.
func (s Stroke) attrs() string {
	var b strings.Builder
	if s.Color != "" {
		fmt.Fprintf(&b, ` stroke="%s"`, esc(s.Color))
	}
	if s.Width != 0 {
		fmt.Fprintf(&b, ` stroke-width="%s"`, strconv.FormatFloat(s.Width, 'g', -1, 64))
	}
	if s.Dash != "" {
		fmt.Fprintf(&b, ` stroke-dasharray="%s"`, esc(s.Dash))
	}
	return b.String()
}

// TextStyle is how a text is set. The zero TextStyle is FontSize, regular, the inherited
// colour, starting at its x.
type TextStyle struct {
	// Size is the font size in pixels; 0 means the document's.
	Size float64
	Bold bool
	// Fill is the colour; "" inherits it.
	Fill string
	// Anchor is "middle" or "end" to centre the text on its x or end it there; "" starts it
	// there.
	Anchor string
	// Vertical turns the text a quarter left about its position, to read bottom to top (a y
	// axis label).
	Vertical bool
}

// Attr is one attribute of a group, written as name="value" with the value escaped.
type Attr struct{ Name, Value string }

// Text draws s with its baseline at y.
func (d *Doc) Text(x, y float64, s string, st TextStyle) {
	fmt.Fprintf(&d.b, `<text x="%s" y="%s"`, num(x), num(y))
	if st.Vertical {
		fmt.Fprintf(&d.b, ` transform="rotate(-90 %s %s)"`, num(x), num(y))
	}
	if st.Size != 0 {
		fmt.Fprintf(&d.b, ` font-size="%s"`, strconv.FormatFloat(st.Size, 'g', -1, 64))
	}
	if st.Bold {
		d.b.WriteString(` font-weight="bold"`)
	}
	if st.Fill != "" {
		fmt.Fprintf(&d.b, ` fill="%s"`, esc(st.Fill))
	}
	if st.Anchor != "" {
		fmt.Fprintf(&d.b, ` text-anchor="%s"`, esc(st.Anchor))
	}
	fmt.Fprintf(&d.b, ">%s</text>\n", esc(s))
}

// Line draws a segment from (x1, y1) to (x2, y2).
func (d *Doc) Line(x1, y1, x2, y2 float64, s Stroke) {
	fmt.Fprintf(&d.b, `<line x1="%s" y1="%s" x2="%s" y2="%s"%s/>`+"\n", num(x1), num(y1), num(x2), num(y2), s.attrs())
}

// Path draws the unfilled SVG path data path; a non-empty name is kept in a data-name
// attribute, so that tests and scripts can find a series' line.
func (d *Doc) Path(name, path string, s Stroke) {
	d.b.WriteString("<path")
	if name != "" {
		fmt.Fprintf(&d.b, ` data-name="%s"`, esc(name))
	}
	fmt.Fprintf(&d.b, ` d="%s" fill="none"%s/>`+"\n", path, s.attrs())
}

// Polyline draws the unfilled line through pts.
func (d *Doc) Polyline(pts []Point, s Stroke) {
	fmt.Fprintf(&d.b, `<polyline points="%s" fill="none"%s/>`+"\n", points(pts), s.attrs())
}

// Polygon fills the polygon of corners pts with the colour fill.
func (d *Doc) Polygon(pts []Point, fill string) {
	fmt.Fprintf(&d.b, `<polygon points="%s" fill="%s"/>`+"\n", points(pts), esc(fill))
}

// Rect fills the rectangle of top-left corner (x, y) with the colour fill.
func (d *Doc) Rect(x, y, w, h float64, fill string) {
	fmt.Fprintf(&d.b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"/>`+"\n", num(x), num(y), num(w), num(h), esc(fill))
}

// Group opens a group whose attributes (a stroke, a fill, a data- label) its elements
// inherit; End closes it.
func (d *Doc) Group(attrs ...Attr) {
	d.b.WriteString("<g")
	for _, a := range attrs {
		fmt.Fprintf(&d.b, ` %s="%s"`, a.Name, esc(a.Value))
	}
	d.b.WriteString(">\n")
}

// End closes the innermost open Group.
func (d *Doc) End() { d.b.WriteString("</g>\n") }

// WriteTo writes the document: the XML declaration, the svg element of the document's size,
// a white background, then the elements.
func (d *Doc) WriteTo(w io.Writer) (int64, error) {
	bw := bufio.NewWriter(w)
	n, _ := fmt.Fprintf(bw, `<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%d" height="%d" viewBox="0 0 %d %d" font-family="%s" font-size="%d">
<rect width="100%%" height="100%%" fill="white"/>
`, d.Width, d.Height, d.Width, d.Height, fontFamily, cmp.Or(d.FontSize, FontSize))
	m, _ := bw.WriteString(d.b.String())
	k, _ := bw.WriteString("</svg>\n")
	return int64(n + m + k), bw.Flush()
}

// num prints a coordinate.
func num(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

// points prints pts as an SVG points list.
func points(pts []Point) string {
	var b strings.Builder
	for i, p := range pts {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(num(p.X) + "," + num(p.Y))
	}
	return b.String()
}

// esc escapes s for XML text and attribute values.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder never fails
	return b.String()
}
