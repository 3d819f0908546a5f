// Command chart reads the output of `go test -bench` of the bench module on stdin and
// prints, in Markdown, the machine it ran on, one table per family of benchmarks (Local,
// Redis, each other one alone), and the goals of issue 23 judged on the run (goals.go:
// ours, the peer, the ratio, met or not). With -svg FILE it also writes a bar chart of
// the figures, one group of bars per benchmark group
// (drawn by internal/chart); with -doc FILE it also writes what it printed into FILE
// between the lines <!-- chart:begin --> and <!-- chart:end --> (docs/benchmarks.md).
//
//	go test -run '^$' -bench . -benchmem | tee bench.txt
//	go run ./cmd/chart -svg ../docs/benchmarks.svg < bench.txt
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ratekit/limiter/internal/chart"
)

func main() {
	svg := flag.String("svg", "", "also write an SVG bar chart to this file")
	doc := flag.String("doc", "", "also write the tables into this Markdown file, between "+begin+" and "+end)
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *svg, *doc); err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}

// The lines of a Markdown file between which -doc writes the tables.
const (
	begin = "<!-- chart:begin -->"
	end   = "<!-- chart:end -->"
)

// run prints the tables of the benchmark output in to stdout, writes the chart to svgPath
// and the tables into docPath, unless they are empty.
func run(in io.Reader, stdout io.Writer, svgPath, docPath string) error {
	rs, err := parse(in)
	if err != nil {
		return err
	}
	if len(rs.Rows) == 0 {
		return fmt.Errorf("no benchmark lines on stdin")
	}
	var out bytes.Buffer
	report(&out, rs)
	if _, err := stdout.Write(out.Bytes()); err != nil {
		return err
	}
	if docPath != "" {
		if err := splice(docPath, out.String()); err != nil {
			return err
		}
	}
	if svgPath == "" {
		return nil
	}
	f, err := os.Create(svgPath)
	if err != nil {
		return err
	}
	err = chart.WriteBars(f, bars(rs.Rows))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// report writes the machine, the tables of the rows and the goals.
func report(w io.Writer, rs results) {
	if len(rs.Config) > 0 {
		// One line: the machine is context, the tables are the figures.
		items := make([]string, len(rs.Config))
		for i, c := range rs.Config {
			items[i] = fmt.Sprintf("%s: %s", c.Key, c.Value)
		}
		fmt.Fprintf(w, "Machine and versions (printed by the run): %s.\n\n", strings.Join(items, "; "))
	}
	for _, t := range tables(rs.Rows) {
		fmt.Fprintf(w, "**%s**\n\n", family(t[0].Bench()))
		table(w, t)
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w, "Goals (issue 23; ratio = ours / peer):")
	fmt.Fprintln(w)
	goalTable(w, rs)
}

// splice replaces the lines of the file at path between begin and end with text.
func splice(path, text string) error {
	doc, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(doc)
	i := strings.Index(s, begin+"\n")
	j := strings.Index(s, "\n"+end)
	if i < 0 || j < i {
		return errors.New(path + ": no " + begin + " line followed by an " + end + " line")
	}
	s = s[:i+len(begin)+1] + "\n" + text + "\n" + s[j+1:]
	return os.WriteFile(path, []byte(s), 0o644)
}

// columns in display order; a table shows the columns some row of it has.
var columns = []string{
	"ns/op", "decisions/s", "bound-decisions/s", "p50-µs", "p99-µs", "bytes/key", "ns/insert",
	"srv-cpu-µs/op", "srv-cmd-µs/op", "cmds/op", "cli-cpu-µs/op", "redis-cmds/s", "B/op", "allocs/op",
}

// family is the table a benchmark's rows go to: "Local" for the in-memory benchmarks
// (BenchmarkLocal...), "Redis" for those on Redis (BenchmarkRedis...), else its own name.
// One table per family keeps the page short; the first column names the benchmark.
func family(bench string) string {
	for _, f := range []string{"Local", "Redis"} {
		if strings.HasPrefix(bench, f) {
			return f
		}
	}
	return bench
}

// tables splits rows by family (see family), in order of appearance.
func tables(rows []row) [][]row {
	var out [][]row
	at := map[string]int{}
	for _, r := range rows {
		i, ok := at[family(r.Bench())]
		if !ok {
			i = len(out)
			at[family(r.Bench())] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], r)
	}
	return out
}

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
