package sim

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter/internal/chart"
)

// attr returns the value of the attribute name of e, "" if it has none.
func attr(e xml.StartElement, name string) string {
	for _, a := range e.Attr {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// svgElem is an element of a drawn chart, with the text it holds and the data-panel of the
// group around it.
type svgElem struct {
	xml.StartElement
	text, panel string
}

// drawSVG draws c and returns its viewBox size and every element, in order.
func drawSVG(t *testing.T, c Chart) (w, h float64, elems []svgElem) {
	t.Helper()
	var b bytes.Buffer
	if err := c.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(&b)
	var panels []string
	var open []int // indices in elems of the elements open at this point
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if tok.Name.Local == "svg" {
				f := strings.Fields(attr(tok, "viewBox"))
				w, _ = strconv.ParseFloat(f[2], 64)
				h, _ = strconv.ParseFloat(f[3], 64)
			}
			panel := ""
			if len(panels) > 0 {
				panel = panels[len(panels)-1]
			}
			if p := attr(tok, "data-panel"); p != "" {
				panel = p
			}
			panels = append(panels, panel)
			open = append(open, len(elems))
			elems = append(elems, svgElem{StartElement: tok.Copy(), panel: panel})
		case xml.EndElement:
			panels = panels[:len(panels)-1]
			open = open[:len(open)-1]
		case xml.CharData:
			if len(open) > 0 {
				elems[open[len(open)-1]].text += string(tok)
			}
		}
	}
	return w, h, elems
}

func num(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q is not a number", s)
	}
	return v
}

// chartOf returns a chart of m series besides the reference, with long names.
func chartOf(m, n int) Chart {
	c := Chart{Title: "burst traffic: admitted by algorithm, " + strings.Repeat("a long title ", 12),
		Subtitle: "base rate 10/s for 20s; " + strings.Repeat("limit=10, window=1s, ", 10) + "allow mode",
		YLabel:   "requests per 1s", Step: 250 * time.Millisecond}
	ref := make([]float64, n)
	for i := range ref {
		ref[i] = float64(i % 7 * 5)
	}
	c.Series = append(c.Series, Series{Name: "offered", Values: ref, Reference: true})
	for k := range m {
		v := make([]float64, n)
		for i := range v {
			v[i] = float64((i + k) % 5 * 4) // coinciding values across series
		}
		c.Series = append(c.Series, Series{Name: fmt.Sprintf("sliding-counter-%d", k), Values: v})
	}
	return c
}

// stepPath matches a step line: M x y, then H x or V y only.
var stepPath = regexp.MustCompile(`^M(\S+) (\S+)((?: [HV]\S+)+)$`)

func TestWriteSVGLayout(t *testing.T) {
	t.Parallel()
	for _, m := range []int{1, 2, 3, 4, 8} {
		t.Run(strconv.Itoa(m), func(t *testing.T) {
			t.Parallel()
			const n = 40
			c := chartOf(m, n)
			w, h, elems := drawSVG(t, c)
			headerLines := 0
			styles := map[string]string{} // series → stroke and dash
			panels := map[string]bool{}
			for _, e := range elems {
				switch e.Name.Local {
				case "text":
					x, y := num(t, attr(e.StartElement, "x")), num(t, attr(e.StartElement, "y"))
					size, bold := float64(chart.FontSize), attr(e.StartElement, "font-weight") == "bold"
					if attr(e.StartElement, "font-size") != "" {
						size = num(t, attr(e.StartElement, "font-size"))
					}
					tw := chart.TextWidth(e.text, size, bold)
					left := x
					switch attr(e.StartElement, "text-anchor") {
					case "middle":
						left = x - tw/2
					case "end":
						left = x - tw
					}
					if attr(e.StartElement, "transform") == "" && (left < 0 || left+tw > w || y > h) {
						t.Errorf("text %q spans x %.0f..%.0f at y %.0f, outside the %.0f×%.0f viewBox", e.text, left, left+tw, y, w, h)
					}
					if y < 60 && strings.Contains(e.text, "long title") || strings.Contains(e.text, "limit=10") {
						headerLines++
					}
				case "path":
					name := attr(e.StartElement, "data-name")
					if name == "" {
						continue
					}
					mm := stepPath.FindStringSubmatch(attr(e.StartElement, "d"))
					if mm == nil {
						t.Fatalf("%s: d=%q is not a step line (M, then H and V only)", name, attr(e.StartElement, "d"))
					}
					// One H per value, ending at the boundaries of the steps.
					var hs []float64
					for _, cmd := range strings.Fields(mm[3]) {
						if cmd[0] == 'H' {
							hs = append(hs, num(t, cmd[1:]))
						}
					}
					if len(hs) != n {
						t.Fatalf("%s: %d H commands, want %d", name, len(hs), n)
					}
					x0 := num(t, mm[1])
					for i, x := range hs {
						if want := x0 + float64(i+1)*(hs[n-1]-x0)/n; x < want-0.11 || x > want+0.11 {
							t.Errorf("%s: step %d ends at x=%v, want %.1f", name, i, x, want)
						}
					}
					if name == "offered" {
						continue
					}
					st := attr(e.StartElement, "stroke") + "|" + attr(e.StartElement, "stroke-dasharray")
					if prev, seen := styles[name]; seen && prev != st {
						t.Errorf("%s drawn as %s and %s", name, prev, st)
					}
					styles[name] = st
					if m >= panelsFrom {
						if e.panel != name {
							t.Errorf("%s drawn in panel %q", name, e.panel)
						}
						panels[e.panel] = true
					}
				}
			}
			if headerLines < 3 {
				t.Errorf("the long title and subtitle make %d lines, want them wrapped", headerLines)
			}
			seen := map[string]string{}
			for name, st := range styles {
				if other, dup := seen[st]; dup {
					t.Errorf("%s and %s share the style %s", name, other, st)
				}
				seen[st] = name
			}
			if len(styles) != m {
				t.Errorf("%d series drawn, want %d", len(styles), m)
			}
			if m >= panelsFrom && len(panels) != m {
				t.Errorf("%d panels, want %d", len(panels), m)
			}
		})
	}
}
