package sim

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{time.Second, "1s"},
		{90 * time.Second, "90s"},
		{250 * time.Millisecond, "250ms"},
		{1500 * time.Microsecond, "1.5ms"},
		{387350 * time.Microsecond, "387.35ms"},
		{1250 * time.Millisecond, "1.25s"},
		{750 * time.Microsecond, "750µs"},
		{-time.Second, "-1s"},
	} {
		if got := FormatDuration(tc.d); got != tc.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// testChart is a small chart with a reference and two lines.
func testChart() Chart {
	return Chart{
		Title: `<b>"a" & 'b'</b>`, Subtitle: "sub & title", YLabel: "requests per 1s", Step: time.Second,
		Series: []Series{
			{Name: "offered", Values: []float64{4, 8, 0, 8}, Reference: true},
			{Name: "x<y", Values: []float64{4, 4, 0, 2}},
			{Name: "z", Values: []float64{2, 4, 0, 8}},
		},
	}
}

func TestWriteSVGIsWellFormedAndEscaped(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := testChart().WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	dec := xml.NewDecoder(bytes.NewReader(b.Bytes()))
	var texts, names []string
	points := map[string]int{}
	var inText bool
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, b.String())
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			inText = tok.Name.Local == "text"
			if tok.Name.Local == "path" && attr(tok, "data-name") != "" {
				name := attr(tok, "data-name")
				names = append(names, name)
				points[name] = strings.Count(attr(tok, "d"), "H")
			}
		case xml.CharData:
			if inText {
				texts = append(texts, string(tok))
			}
		case xml.EndElement:
			inText = false
		}
	}
	if got, want := strings.Join(names, ","), "offered,x<y,z"; got != want {
		t.Errorf("series paths %q, want %q", got, want)
	}
	for _, n := range names {
		if points[n] != 4 {
			t.Errorf("path %q has %d steps, want 4", n, points[n])
		}
	}
	for _, want := range []string{`<b>"a" & 'b'</b>`, "sub & title", "x<y", "z", "offered", "time (s)", "requests per 1s", "0", "8", "4"} {
		if !contains(texts, want) {
			t.Errorf("no text %q among %q", want, texts)
		}
	}
}

func TestWriteASCII(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if err := testChart().WriteASCII(&b, 8, 4); err != nil {
		t.Fatal(err)
	}
	// 4 values in 8 columns: 2 columns each; a value v is at level round(v/8 × 4).
	want := `requests per 1s
      8 |  ..  22
        |  ..  ..
      4 |11**  ..
        |22..  11
      0 +----**--
        0s     4s
        . offered   1 x<y   2 z   * several
`
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}

	// One line: bars in front of the reference; many values: averaged columns.
	c := Chart{Step: time.Second, Series: []Series{
		{Name: "offered", Values: []float64{10, 10, 10, 10, 0, 0, 0, 0, 10, 10, 10, 10, 10, 10, 10, 10}, Reference: true},
		{Name: "admitted", Values: []float64{0, 10, 10, 10, 0, 0, 0, 0, 10, 10, 10, 10, 10, 10, 10, 10}},
	}}
	b.Reset()
	if err := c.WriteASCII(&b, 8, 2); err != nil {
		t.Fatal(err)
	}
	// 16 values in 8 columns: pairs averaged, the first one (5 of 10) at level 1 of 2.
	want = `     10 |.#  ####
      5 |##  ####
      0 +--------
        0s    16s
        . offered   # admitted
`
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestChartErrors(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]Chart{
		"no series":        {Step: time.Second},
		"no values":        {Step: time.Second, Series: []Series{{Name: "a"}}},
		"different length": {Step: time.Second, Series: []Series{{Name: "a", Values: []float64{1}}, {Name: "b", Values: []float64{1, 2}}}},
		"zero step":        {Series: []Series{{Name: "a", Values: []float64{1}}}},
	} {
		if err := c.WriteSVG(io.Discard); !errors.Is(err, ErrChart) {
			t.Errorf("%s: WriteSVG error %v, want ErrChart", name, err)
		}
		if err := c.WriteASCII(io.Discard, 60, 10); !errors.Is(err, ErrChart) {
			t.Errorf("%s: WriteASCII error %v, want ErrChart", name, err)
		}
	}
	if _, err := NewChart("t", "s", time.Second, []string{"a"}, nil); !errors.Is(err, ErrChart) {
		t.Errorf("NewChart without runs: %v, want ErrChart", err)
	}
}

func TestNewChart(t *testing.T) {
	t.Parallel()
	rows := []Interval{{Offered: 3, Admitted: 2}, {Start: time.Second, Offered: 1, Admitted: 1}}
	c, err := NewChart("t", "s", time.Second, []string{"gcra"}, [][]Interval{rows})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(c.Series), 2; got != want {
		t.Fatalf("%d series, want %d", got, want)
	}
	if s := c.Series[0]; s.Name != "offered" || !s.Reference || s.Values[0] != 3 || s.Values[1] != 1 {
		t.Errorf("series 0 = %+v, want the offered reference", s)
	}
	if s := c.Series[1]; s.Name != "admitted" || s.Reference || s.Values[0] != 2 || s.Values[1] != 1 {
		t.Errorf("series 1 = %+v, want admitted", s)
	}
	c, _ = NewChart("t", "s", time.Second, []string{"a", "b"}, [][]Interval{rows, rows})
	if got, want := c.Series[2].Name, "b"; got != want {
		t.Errorf("compared series named %q, want %q", got, want)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
