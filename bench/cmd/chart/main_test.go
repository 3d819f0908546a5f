package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `goos: linux
pkg: github.com/ratekit/limiter/bench
BenchmarkLocalSingleKey/g=1/ratekit-allow-2         	 4672897	       256.6 ns/op	       0 B/op	       0 allocs/op
BenchmarkLocalSingleKey/g=1/x-time-rate-2           	 6250000	       191.9 ns/op	       0 B/op	       0 allocs/op
BenchmarkRedis/ratekit-gcra-2   	   52704	     44308 ns/op	     22570 decisions/s	    1121 B/op	      18 allocs/op
BenchmarkRedis/redis_rate-gcra-2	   65535	     36489 ns/op	     27405 decisions/s	     808 B/op	      19 allocs/op
BenchmarkBroken/x-2 12 notanumber ns/op
BenchmarkNoGroup-2 	 100	 5 ns/op
PASS
ok  	github.com/ratekit/limiter/bench	12.3s
`

func TestRun(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "b.svg")
	var out strings.Builder
	if err := run(strings.NewReader(sample), &out, svg); err != nil {
		t.Fatal(err)
	}
	want := `| benchmark | contender | ns/op | decisions/s | B/op | allocs/op |
|---|---|---:|---:|---:|---:|
| LocalSingleKey/g=1 | ratekit-allow | 256.6 |  | 0 | 0 |
| LocalSingleKey/g=1 | x-time-rate | 191.9 |  | 0 | 0 |
| Redis | ratekit-gcra | 44308 | 22570 | 1121 | 18 |
| Redis | redis_rate-gcra | 36489 | 27405 | 808 | 19 |
`
	if got := out.String(); got != want {
		t.Errorf("table\n%s\nwant\n%s", got, want)
	}
	doc, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"LocalSingleKey/g=1 — ns/op (lower is better)", "Redis — decisions/s (higher is better)",
		`width="440.0" height="18.0" fill="#2f6fdf"`, // ours, the longest ns/op of its group
		`width="440.0" height="18.0" fill="#9aa5b1"`, // redis_rate, the most decisions/s
	} {
		if !strings.Contains(string(doc), s) {
			t.Errorf("the chart lacks %q", s)
		}
	}
}

func TestRunWithoutResults(t *testing.T) {
	if err := run(strings.NewReader("PASS\n"), &strings.Builder{}, ""); err == nil {
		t.Error("no error for an input without benchmark lines")
	}
}
