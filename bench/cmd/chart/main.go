// Command chart reads the output of `go test -bench` of the bench module on stdin and
// prints the side-by-side table (Markdown) on stdout; with -svg FILE it also writes a bar
// chart of the figures, one group of bars per benchmark group (drawn by internal/chart).
//
//	go test -run '^$' -bench . -benchmem | tee bench.txt
//	go run ./cmd/chart -svg ../docs/benchmarks.svg < bench.txt
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ratekit/limiter/internal/chart"
)

func main() {
	out := flag.String("svg", "", "also write an SVG bar chart to this file")
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *out); err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}

// run prints the table of the benchmark output in, and writes the chart to svgPath unless
// it is empty.
func run(in io.Reader, stdout io.Writer, svgPath string) error {
	rows, err := parse(in)
	if err != nil {
		return err
	}
	if len(rows) == 0 {
		return fmt.Errorf("no benchmark lines on stdin")
	}
	table(stdout, rows)
	if svgPath == "" {
		return nil
	}
	f, err := os.Create(svgPath)
	if err != nil {
		return err
	}
	err = chart.WriteBars(f, bars(rows))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// columns in display order; a column is shown only when some row has it.
var columns = []string{"ns/op", "decisions/s", "p50-µs", "p99-µs", "bytes/key", "ns/insert", "B/op", "allocs/op"}

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

// metricOf picks what a group's bars show: decisions/s for Redis, bytes/key for the
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

// bars returns one group of bars per benchmark group, in the order of the rows, ours
// highlighted.
func bars(rows []row) []chart.BarGroup {
	var order []string
	byGroup := map[string][]row{}
	for _, r := range rows {
		if _, seen := byGroup[r.Group]; !seen {
			order = append(order, r.Group)
		}
		byGroup[r.Group] = append(byGroup[r.Group], r)
	}
	groups := make([]chart.BarGroup, 0, len(order))
	for _, name := range order {
		rs := byGroup[name]
		metric := metricOf(rs)
		better := "lower is better"
		if metric == "decisions/s" {
			better = "higher is better"
		}
		g := chart.BarGroup{Title: fmt.Sprintf("%s — %s (%s)", name, metric, better)}
		for _, r := range rs {
			v := r.Metrics[metric]
			g.Bars = append(g.Bars, chart.Bar{Label: r.Name, Value: v, Text: format(v),
				Highlight: strings.HasPrefix(r.Name, "ratekit")})
		}
		groups = append(groups, g)
	}
	return groups
}
