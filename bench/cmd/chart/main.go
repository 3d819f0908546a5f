// Command chart reads the output of `go test -bench` of the bench module on stdin and
// prints the side-by-side table (Markdown) on stdout; with -svg FILE it also writes a bar
// chart of the figures, one panel per benchmark group. Standard library only.
//
//	go test -run '^$' -bench . -benchmem | tee bench.txt
//	go run ./cmd/chart -svg ../docs/benchmarks.svg < bench.txt
package main

import (
	"bufio"
	"flag"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// row is one benchmark result: Group is the name up to the last '/', Name the contender.
type row struct {
	Group, Name string
	Metrics     map[string]float64
}

var procSuffix = regexp.MustCompile(`-\d+$`)

func parse(r io.Reader) ([]row, error) {
	var rows []row
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		name := procSuffix.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			continue
		}
		m := map[string]float64{}
		for j := 2; j+1 < len(f); j += 2 {
			v, err := strconv.ParseFloat(f[j], 64)
			if err != nil {
				continue
			}
			m[f[j+1]] = v
		}
		rows = append(rows, row{Group: name[:i], Name: name[i+1:], Metrics: m})
	}
	return rows, sc.Err()
}

// columns in display order; a column is shown only when some row has it.
var columns = []string{"ns/op", "decisions/s", "bytes/key", "ns/insert", "B/op", "allocs/op"}

func table(w io.Writer, rows []row) {
	var show []string
	for _, c := range columns {
		for _, r := range rows {
			if _, ok := r.Metrics[c]; ok {
				show = append(show, c)
				break
			}
		}
	}
	fmt.Fprintf(w, "| benchmark | contender | %s |\n", strings.Join(show, " | "))
	fmt.Fprintf(w, "|---|---|%s\n", strings.Repeat("---:|", len(show)))
	for _, r := range rows {
		cells := make([]string, len(show))
		for i, c := range show {
			if v, ok := r.Metrics[c]; ok {
				cells[i] = format(v)
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", r.Group, r.Name, strings.Join(cells, " | "))
	}
}

func format(v float64) string {
	switch {
	case v == math.Trunc(v) || v >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// metricOf picks what a group's panel charts: decisions/s for Redis, bytes/key for the
// memory group, ns/op otherwise.
func metricOf(rows []row) string {
	for _, c := range []string{"decisions/s", "bytes/key"} {
		for _, r := range rows {
			if _, ok := r.Metrics[c]; ok {
				return c
			}
		}
	}
	return "ns/op"
}

func svg(w io.Writer, rows []row) {
	type panel struct {
		group, metric string
		rows          []row
	}
	var panels []*panel
	index := map[string]*panel{}
	for _, r := range rows {
		p := index[r.Group]
		if p == nil {
			p = &panel{group: r.Group}
			index[r.Group] = p
			panels = append(panels, p)
		}
		p.rows = append(p.rows, r)
	}
	const (
		width, left, barH, gap, head = 760, 230, 18, 4, 28
		barMax                       = width - left - 90
	)
	height := 10
	for _, p := range panels {
		p.metric = metricOf(p.rows)
		height += head + len(p.rows)*(barH+gap) + 12
	}
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	y := 10
	for _, p := range panels {
		better := "lower is better"
		if p.metric == "decisions/s" {
			better = "higher is better"
		}
		fmt.Fprintf(w, `<text x="10" y="%d" font-weight="bold">%s — %s (%s)</text>`+"\n",
			y+16, html.EscapeString(p.group), html.EscapeString(p.metric), better)
		y += head
		top := 0.0
		for _, r := range p.rows {
			top = max(top, r.Metrics[p.metric])
		}
		for _, r := range p.rows {
			v := r.Metrics[p.metric]
			bw := 0
			if top > 0 {
				bw = int(v / top * barMax)
			}
			color := "#9aa5b1"
			if strings.HasPrefix(r.Name, "ratekit") {
				color = "#2f6fdf"
			}
			fmt.Fprintf(w, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", left-6, y+barH-5, html.EscapeString(r.Name))
			fmt.Fprintf(w, `<rect x="%d" y="%d" width="%d" height="%d" fill="%s"/>`+"\n", left, y, max(bw, 1), barH, color)
			fmt.Fprintf(w, `<text x="%d" y="%d">%s</text>`+"\n", left+bw+4, y+barH-5, format(v))
			y += barH + gap
		}
		y += 12
	}
	fmt.Fprintln(w, "</svg>")
}

func main() {
	out := flag.String("svg", "", "also write an SVG bar chart to this file")
	flag.Parse()
	rows, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
	if len(rows) == 0 {
		fmt.Fprintln(os.Stderr, "chart: no benchmark lines on stdin")
		os.Exit(1)
	}
	table(os.Stdout, rows)
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintln(os.Stderr, "chart:", err)
			os.Exit(1)
		}
		svg(f, rows)
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "chart:", err)
			os.Exit(1)
		}
	}
}
