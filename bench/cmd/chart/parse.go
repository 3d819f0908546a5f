package main

import (
	"io"
	"math"
	"strconv"
	"strings"

	"golang.org/x/perf/benchfmt"
)

// row is one benchmark result: Group is the name up to the last '/', Name the contender,
// Metrics the values by their unit as the benchmark reported it (ns/op, not sec/op).
type row struct {
	Group, Name string
	Metrics     map[string]float64
}

// Bench is the benchmark the row belongs to: the group's first element (LocalSingleKey).
func (r row) Bench() string {
	b, _, _ := strings.Cut(r.Group, "/")
	return b
}

// Key is the row's full name, "Group/Name" (LocalSingleKey/g=1/ratekit-allow).
func (r row) Key() string { return r.Group + "/" + r.Name }

// config is one configuration line of the output ("cpu: ...", "redis: ..."), which the
// bench module's TestMain prints to name the machine.
type config struct{ Key, Value string }

// results is a parsed bench output: the machine it ran on and its results in order.
type results struct {
	Config []config
	Rows   []row
}

// get returns the metric of the row named key, and whether both exist.
func (rs results) get(key, metric string) (float64, bool) {
	for _, r := range rs.Rows {
		if r.Key() == key {
			v, ok := r.Metrics[metric]
			return v, ok
		}
	}
	return 0, false
}

// parse reads the results of `go test -bench` output. Lines that are not results (the
// test's log, PASS) are skipped, and so are malformed result lines, as are benchmarks
// without a '/' (each bench benchmark names its contender in a sub-benchmark). The
// configuration is that of the last result, in the order of the lines, pkg left out.
func parse(r io.Reader) (results, error) {
	var out results
	br := benchfmt.NewReader(r, "stdin")
	for br.Scan() {
		res, ok := br.Result().(*benchfmt.Result)
		if !ok { // unit metadata, or a *benchfmt.SyntaxError
			continue
		}
		out.Config = out.Config[:0]
		for _, c := range res.Config {
			if c.File && c.Key != "pkg" {
				out.Config = append(out.Config, config{c.Key, string(c.Value)})
			}
		}
		name := contender(res.Name)
		i := strings.LastIndexByte(name, '/')
		if i < 0 {
			continue
		}
		m := map[string]float64{}
		for _, v := range res.Values {
			// Reader tidies units (ns/op becomes sec/op); the table keeps the originals.
			if v.OrigUnit != "" {
				m[v.OrigUnit] = v.OrigValue
			} else {
				m[v.Unit] = v.Value
			}
		}
		out.Rows = append(out.Rows, row{Group: name[:i], Name: name[i+1:], Metrics: m})
	}
	return out, br.Err()
}

// contender returns n without "Benchmark" and the -GOMAXPROCS suffix.
func contender(n benchfmt.Name) string {
	base, parts := n.Parts()
	var b strings.Builder
	b.Write(base)
	for _, p := range parts {
		if p[0] != '-' {
			b.Write(p)
		}
	}
	return b.String()
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
