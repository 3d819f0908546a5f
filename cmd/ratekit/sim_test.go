package main

import (
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// table returns the lines of out up to the first empty line: the table of a sim run.
func table(out string) string {
	head, _, _ := strings.Cut(out, "\n\n")
	return head + "\n"
}

func TestSimTables(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{
			// make run: a burst of 30 takes the 20 stored tokens; 2 s later 20 more have refilled.
			name: "token-bucket burst",
			args: []string{"--algo", "token-bucket", "--rate", "10", "--burst", "20", "--traffic", "burst", "--duration", "4s"},
			want: `token-bucket(rate=10/s, burst=20), burst traffic at base rate 10/s for 4s, allow mode
    time  offered admitted  delayed   denied
      0s       30       20        0       10
      1s        0        0        0        0
      2s       30       20        0       10
      3s        0        0        0        0
   total       60       40        0       20
`,
		},
		{
			// 15/s evenly: the window's 10 permits are gone 2/3 into each second.
			name: "fixed-window steady quarter seconds",
			args: []string{"--algo", "fixed-window", "--traffic", "steady", "--duration", "2s", "--interval", "250ms"},
			want: `fixed-window(limit=10, window=1s), steady traffic at base rate 10/s for 2s, allow mode
    time  offered admitted  delayed   denied
      0s        3        3        0        0
   250ms        4        4        0        0
   500ms        4        3        0        1
   750ms        4        0        0        4
      1s        3        3        0        0
   1.25s        4        4        0        0
    1.5s        4        3        0        1
   1.75s        4        0        0        4
   total       30       20        0       10
`,
		},
		{
			// Wait mode: 10 tokens at once, the next 10 as they refill (100 ms .. 1 s), the rest denied.
			name: "token-bucket burst wait",
			args: []string{"--algo", "token-bucket", "--traffic", "burst", "--duration", "4s", "--mode", "wait", "--max-wait", "1s"},
			want: `token-bucket(rate=10/s, burst=10), burst traffic at base rate 10/s for 4s, wait mode (max wait 1s)
    time  offered admitted  delayed   denied mean delay  max delay
      0s       30       20       10       10      550ms         1s
      1s        0        0        0        0         0s         0s
      2s       30       20       10       10      550ms         1s
      3s        0        0        0        0         0s         0s
   total       60       40       20       20      550ms         1s
`,
		},
		{
			// A leaky bucket as a queue of 10: one at once, 9 queued 100 ms apart.
			name: "leaky-bucket burst wait",
			args: []string{"--algo", "leaky-bucket", "--traffic", "burst", "--duration", "2s", "--mode", "wait", "--max-wait", "2s"},
			want: `leaky-bucket(rate=10/s, capacity=10), burst traffic at base rate 10/s for 2s, wait mode (max wait 2s)
    time  offered admitted  delayed   denied mean delay  max delay
      0s       30       10        9       20      500ms      900ms
      1s        0        0        0        0         0s         0s
   total       30       10        9       20      500ms      900ms
`,
		},
		{
			// Guava's SmoothBursty paces 15/s to one per 100 ms; waits grow by 33 ms until
			// they pass the 500 ms bound.
			name: "smooth-bursty steady wait",
			args: []string{"--algo", "smooth-bursty", "--traffic", "steady", "--duration", "3s", "--mode", "wait", "--max-wait", "500ms"},
			want: `smooth-bursty(rate=10/s, max-burst=1s), steady traffic at base rate 10/s for 3s, wait mode (max wait 500ms)
    time  offered admitted  delayed   denied mean delay  max delay
      0s       15       15       14        0      250ms      467ms
      1s       15       10       10        5    483.5ms      500ms
      2s       15       10       10        5    483.5ms      500ms
   total       45       35       34       10   387.35ms      500ms
`,
		},
		{
			name: "compare spike",
			args: []string{"--compare", "fixed-window,token-bucket,gcra", "--traffic", "spike", "--duration", "10s"},
			want: `spike traffic at base rate 10/s for 10s, allow mode
admitted per interval:
    time  offered fixed-window token-bucket     gcra
      0s        5            5            5        5
      1s        5            5            5        5
      2s        5            5            5        5
      3s        5            5            5        5
      4s       27           10           16       16
      5s       28           10            8        8
      6s        5            5            5        5
      7s        5            5            5        5
      8s        5            5            5        5
      9s        5            5            5        5
   total       95           60           64       64
`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCLI(t, append([]string{"sim"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			if got := table(out); got != tc.want {
				t.Errorf("table:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

func TestSimPrintsASCIIChart(t *testing.T) {
	t.Parallel()
	_, out, _ := runCLI(t, "sim", "--algo", "token-bucket", "--burst", "20", "--duration", "4s")
	want := `
requests per 1s
     30 |...   ...
        |...   ...
        |...   ...
        |###   ###
        |###   ###
     15 |###   ###
        |###   ###
        |###   ###
        |###   ###
        |###   ###
      0 +------------
        0s         4s
        . offered   # admitted
`
	if !strings.Contains(out, want) {
		t.Errorf("output lacks the chart%s\ngot:\n%s", want, out)
	}
}

func TestSimCompareSummary(t *testing.T) {
	t.Parallel()
	_, out, _ := runCLI(t, "sim", "--compare", "leaky-bucket,smooth-bursty", "--traffic", "burst", "--duration", "4s", "--mode", "wait")
	for _, want := range []string{
		"algorithm                                admitted  delayed   denied mean delay  max delay\n",
		"leaky-bucket(rate=10/s, capacity=10)           20       18       40      500ms      900ms\n",
		"1 leaky-bucket   2 smooth-bursty   * several\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// svgDoc is the part of the SVG the tests look at.
type svgDoc struct {
	Texts []string  // every text, in order
	Paths []svgPath // every series' path (with a data-name), in order
}

type svgPath struct {
	Name, D string
}

// parseSVG checks that path is well-formed XML from end to end and collects its texts and
// series paths, however deep in groups.
func parseSVG(tb testing.TB, path string) svgDoc {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	dec := xml.NewDecoder(strings.NewReader(string(data)))
	var doc svgDoc
	inText := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			tb.Fatalf("%s is not well-formed XML: %v", path, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			inText = tok.Name.Local == "text"
			if inText {
				doc.Texts = append(doc.Texts, "")
			}
			var p svgPath
			for _, a := range tok.Attr {
				switch a.Name.Local {
				case "data-name":
					p.Name = a.Value
				case "d":
					p.D = a.Value
				}
			}
			if tok.Name.Local == "path" && p.Name != "" {
				doc.Paths = append(doc.Paths, p)
			}
		case xml.CharData:
			if inText {
				doc.Texts[len(doc.Texts)-1] += string(tok)
			}
		case xml.EndElement:
			inText = false
		}
	}
	return doc
}

func TestSimWritesSVG(t *testing.T) {
	t.Parallel()
	all := []string{"fixed-window", "sliding-log", "sliding-counter", "token-bucket", "leaky-bucket", "gcra", "smooth-bursty", "smooth-warmup"}
	for _, tc := range []struct {
		name   string
		args   []string
		series []string // the paths, in order
		points int
	}{
		{"one algorithm", []string{"--algo", "gcra", "--traffic", "ramp", "--duration", "12s"},
			[]string{"offered", "admitted"}, 12},
		{"finer interval", []string{"--algo", "sliding-log", "--duration", "3s", "--interval", "250ms"},
			[]string{"offered", "admitted"}, 12},
		{"compare three", []string{"--compare", "fixed-window,gcra,smooth-bursty", "--duration", "5s"},
			[]string{"offered", "fixed-window", "gcra", "smooth-bursty"}, 5},
		// From four algorithms on, a panel each, over the offered load.
		{"compare", []string{"--compare", strings.Join(all, ","), "--traffic", "spike", "--duration", "20s"},
			[]string{"offered", "fixed-window", "offered", "sliding-log", "offered", "sliding-counter", "offered", "token-bucket",
				"offered", "leaky-bucket", "offered", "gcra", "offered", "smooth-bursty", "offered", "smooth-warmup"}, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "chart.svg")
			code, out, errOut := runCLI(t, append([]string{"sim", "--svg", path}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			if !strings.Contains(out, "wrote "+path+"\n") {
				t.Errorf("stdout does not say it wrote %s", path)
			}
			doc := parseSVG(t, path)
			if got, want := len(doc.Paths), len(tc.series); got != want {
				t.Fatalf("%d series paths, want %d", got, want)
			}
			for i, p := range doc.Paths {
				if got, want := p.Name, tc.series[i]; got != want {
					t.Errorf("path %d is %q, want %q", i, got, want)
				}
				// A step line: one H per interval, and no diagonal (only H and V after M).
				if got, want := strings.Count(p.D, "H"), tc.points; got != want || strings.ContainsAny(p.D, "LlCc") {
					t.Errorf("path %q has %d H commands, want %d (a step line): %s", p.Name, got, want, p.D)
				}
				if !slices.ContainsFunc(doc.Texts, func(s string) bool { return s == p.Name || strings.HasPrefix(s, p.Name+" (") }) {
					t.Errorf("no legend or panel title %q among %q", p.Name, doc.Texts)
				}
			}
			if !contains(doc.Texts, "time (s)") {
				t.Errorf("no x-axis label among %q", doc.Texts)
			}
		})
	}
}

func TestSimSVGErrorIsOneLineExitOne(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "missing", "chart.svg")
	code, _, errOut := runCLI(t, "sim", "--duration", "2s", "--svg", path)
	if code != exitFailure {
		t.Errorf("exit %d, want %d", code, exitFailure)
	}
	if strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "no such file or directory") {
		t.Errorf("stderr = %q, want one line naming the error", errOut)
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
