package chart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

// element is one element of a drawn document, with its attributes, its text and the
// data-panel of the group around it.
type element struct {
	name, text, panel string
	attr              map[string]string
}

// parse checks that doc is well-formed and returns its elements in order.
func parse(t *testing.T, doc []byte) []element {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	var out []element
	var open []int
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, doc)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			e := element{name: tok.Name.Local, attr: map[string]string{}}
			for _, a := range tok.Attr {
				e.attr[a.Name.Local] = a.Value
			}
			if len(open) > 0 {
				e.panel = out[open[len(open)-1]].panel
			}
			if p := e.attr["data-panel"]; p != "" {
				e.panel = p
			}
			open = append(open, len(out))
			out = append(out, e)
		case xml.EndElement:
			open = open[:len(open)-1]
		case xml.CharData:
			if len(open) > 0 {
				out[open[len(open)-1]].text += string(tok)
			}
		}
	}
}

// paths returns the d of every named path, by name and panel ("name@panel").
func paths(elems []element) map[string]string {
	m := map[string]string{}
	for _, e := range elems {
		if e.name == "path" && e.attr["data-name"] != "" {
			m[e.attr["data-name"]+"@"+e.panel] = e.attr["d"]
		}
	}
	return m
}

func draw(t *testing.T, c Chart) []element {
	t.Helper()
	var b bytes.Buffer
	if err := c.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	return parse(t, b.Bytes())
}

func TestShapes(t *testing.T) {
	t.Parallel()
	pts := []Point{{0, 0}, {1, 10}, {2, 10}, {4, 5}}
	c := Chart{XLabel: "s", YLabel: "n", Panels: []Panel{{Series: []Series{
		{Name: "line", Points: pts},
		{Name: "step", Points: pts, Shape: Step},
	}}}}
	got := paths(draw(t, c))
	// No title: the plot spans x 72..680 (0..4) and y 358..26 (0..10). The step line holds
	// each value until the next point; the last point only ends it.
	for name, want := range map[string]string{
		"line@": "M72.0 358.0 L224.0 26.0 L376.0 26.0 L680.0 192.0",
		"step@": "M72.0 358.0 H224.0 V26.0 H376.0 H680.0",
	} {
		if got[name] != want {
			t.Errorf("%s: d=%q, want %q", name, got[name], want)
		}
	}
}

func TestPanelsWithOwnScales(t *testing.T) {
	t.Parallel()
	c := Chart{Title: "adaptive limit", XLabel: "time (s)", Panels: []Panel{
		{YLabel: "limit", Series: []Series{
			{Name: "limit", Shape: Step, Points: []Point{{0, 100}, {5, 40}, {10, 40}}},
			{Name: "in flight", Points: []Point{{0, 10}, {5, 40}, {10, 30}}},
		}},
		{YLabel: "latency (ms)", Series: []Series{
			{Name: "p99", Points: []Point{{0, 0.2}, {5, 0.45}, {10, 0.3}}},
		}},
	}}
	elems := draw(t, c)
	ticks := map[string][]string{} // panel → y tick labels
	headings := map[string][]string{}
	var labels []string
	for _, e := range elems {
		switch {
		case e.name == "text" && e.attr["text-anchor"] == "end":
			ticks[e.panel] = append(ticks[e.panel], e.text)
		case e.name == "text" && e.attr["font-weight"] == "bold" && e.panel != "":
			headings[e.panel] = append(headings[e.panel], e.text)
		case e.name == "text" && e.attr["transform"] != "":
			labels = append(labels, e.text)
		}
	}
	if got, want := strings.Join(ticks["limit, in flight"], " "), "0 20 40 60 80 100"; got != want {
		t.Errorf("limit panel ticks %q, want %q", got, want)
	}
	if got, want := strings.Join(ticks["p99"], " "), "0.0 0.1 0.2 0.3 0.4 0.5"; got != want {
		t.Errorf("latency panel ticks %q, want %q", got, want)
	}
	if got, want := strings.Join(headings["limit, in flight"], ","), "limit,in flight"; got != want {
		t.Errorf("limit panel heading %q, want %q", got, want)
	}
	if got, want := strings.Join(labels, ","), "limit,latency (ms)"; got != want {
		t.Errorf("y labels %q, want %q", got, want)
	}
	// Each series keeps one style, and no two share one.
	seen := map[string]string{}
	for _, e := range elems {
		if e.name == "path" && e.attr["data-name"] != "" {
			st := e.attr["stroke"] + "|" + e.attr["stroke-dasharray"]
			if other, dup := seen[st]; dup && other != e.attr["data-name"] {
				t.Errorf("%s and %s share the style %s", e.attr["data-name"], other, st)
			}
			seen[st] = e.attr["data-name"]
		}
	}
}

func TestSharedScaleAndCommonReference(t *testing.T) {
	t.Parallel()
	ref := Series{Name: "offered", Reference: true, Points: []Point{{0, 8}, {2, 8}}}
	c := Chart{Columns: 2, YLabel: "n", Panels: []Panel{
		{Series: []Series{ref, {Name: "a", Points: []Point{{0, 1}, {2, 1}}}}},
		{Series: []Series{ref, {Name: "b", Points: []Point{{0, 50}, {2, 50}}}}},
	}}
	elems := draw(t, c)
	var ticks = map[string]string{}
	common := false
	for _, e := range elems {
		if e.name == "text" && e.attr["text-anchor"] == "end" {
			ticks[e.panel] += e.text + " "
		}
		if e.name == "text" && e.text == "offered (in every panel)" && e.panel == "" {
			common = true
		}
	}
	if ticks["a"] != ticks["b"] || ticks["a"] != "0 10 20 30 40 50 " {
		t.Errorf("panel ticks %q and %q, want the same scale 0..50", ticks["a"], ticks["b"])
	}
	if !common {
		t.Error("the reference every panel holds is not named once above the grid")
	}
}

func TestInvalid(t *testing.T) {
	t.Parallel()
	nan := 0.0
	nan /= nan
	for name, c := range map[string]Chart{
		"no panel":   {},
		"no series":  {Panels: []Panel{{}}},
		"no points":  {Panels: []Panel{{Series: []Series{{Name: "a"}}}}},
		"not finite": {Panels: []Panel{{Series: []Series{{Name: "a", Points: []Point{{0, 1}, {1, nan}}}}}}},
		"no x span":  {Panels: []Panel{{Series: []Series{{Name: "a", Points: []Point{{0, 1}}}}}}},
	} {
		if err := c.WriteSVG(io.Discard); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	if err := WriteBars(io.Discard, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("WriteBars(nil) = %v, want ErrInvalid", err)
	}
}

func TestBars(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	err := WriteBars(&b, []BarGroup{
		{Title: "Local <ns/op>", Bars: []Bar{{Label: "ours", Value: 200, Text: "200", Highlight: true}, {Label: "peer", Value: 100, Text: "100"}}},
		{Title: "Redis", Bars: []Bar{{Label: "zero", Value: 0, Text: "0"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var widths, fills, texts []string
	for _, e := range parse(t, b.Bytes()) {
		switch e.name {
		case "rect":
			if e.attr["x"] != "" {
				widths = append(widths, e.attr["width"])
				fills = append(fills, e.attr["fill"])
			}
		case "text":
			texts = append(texts, e.text)
		}
	}
	if got, want := strings.Join(widths, " "), "440.0 220.0 1.0"; got != want {
		t.Errorf("bar widths %q, want %q", got, want)
	}
	if fills[0] == fills[1] {
		t.Errorf("the highlighted bar has the others' colour %s", fills[0])
	}
	if got, want := strings.Join(texts, "|"), "Local <ns/op>|ours|200|peer|100|Redis|zero|0"; got != want {
		t.Errorf("texts %q, want %q", got, want)
	}
}
