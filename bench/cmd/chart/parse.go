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

// parse reads the results of `go test -bench` output. Lines that are not results (the
// test's log, PASS, configuration) are skipped, and so are malformed result lines, as are
// benchmarks without a '/' (each bench benchmark names its contender in a sub-benchmark).
func parse(r io.Reader) ([]row, error) {
	var rows []row
	br := benchfmt.NewReader(r, "stdin")
	for br.Scan() {
		res, ok := br.Result().(*benchfmt.Result)
		if !ok { // unit metadata, or a *benchfmt.SyntaxError
			continue
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
		rows = append(rows, row{Group: name[:i], Name: name[i+1:], Metrics: m})
	}
	return rows, br.Err()
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
