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
	if err := run(strings.NewReader(sample), &out, svg, ""); err != nil {
		t.Fatal(err)
	}
	want := `Machine and versions (printed by the run): goos: linux.

**Local**

| benchmark | contender | ns/op | B/op | allocs/op |
|---|---|---:|---:|---:|
| LocalSingleKey/g=1 | ratekit-allow | 256.6 | 0 | 0 |
| LocalSingleKey/g=1 | x-time-rate | 191.9 | 0 | 0 |

**Redis**

| benchmark | contender | ns/op | decisions/s | B/op | allocs/op |
|---|---|---:|---:|---:|---:|
| Redis | ratekit-gcra | 44308 | 22570 | 1121 | 18 |
| Redis | redis_rate-gcra | 36489 | 27405 | 808 | 19 |
`
	if got := out.String(); !strings.Contains(got, want) {
		t.Errorf("output\n%s\nlacks\n%s", got, want)
	}
	for _, s := range []string{
		"| one key, facade Allow | 256.6 ns/op | x/time 191.9 ns/op | 1.34× | ≤ 0.8× | **not met** |",
		"| Redis FixedWindow | – | ulule – | – | ≥ 1.0× | not measured |",
		"goals met: 0 of 16 (15 not measured)",
	} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, out.String())
		}
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
	if err := run(strings.NewReader("PASS\n"), &strings.Builder{}, "", ""); err == nil {
		t.Error("no error for an input without benchmark lines")
	}
}

// smoke is the output of one `make bench BENCHTIME=100ms` (a loaded machine: the figures
// mean nothing, the names and units are the bench module's).
func smoke(t *testing.T) results {
	t.Helper()
	f, err := os.Open("testdata/smoke.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rs, err := parse(f)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestParseSmoke(t *testing.T) {
	rs := smoke(t)
	if got, want := len(rs.Rows), 55; got != want {
		t.Errorf("%d rows, want %d", got, want)
	}
	var keys []string
	for _, c := range rs.Config {
		keys = append(keys, c.Key)
	}
	if got, want := strings.Join(keys, " "), "date go nproc gomaxprocs redis peers goos goarch cpu"; got != want {
		t.Errorf("config keys %q, want %q", got, want)
	}
	for _, c := range []struct {
		row, metric string
		want        float64
	}{
		{"LocalSingleKey/g=1/ratekit-allow", "ns/op", 148.8},
		{"LocalMemory/ratekit-allow", "bytes/key", 117.8},
		{"Redis/ratekit-fixed-window", "srv-cpu-µs/op", 18.38},
		{"Redis/ratekit-sliding-counter", "cmds/op", 5},
		{"Redis/redis_rate-gcra", "B/op", 1854},
		{"RedisAbuse/ratekit-token-bucket-denial-cache", "redis-cmds/s", 5475},
		{"RatekitdGRPC/ratekit-redis", "p99-µs", 10453},
	} {
		if got, ok := rs.get(c.row, c.metric); !ok || got != c.want {
			t.Errorf("%s %s = %v, %v; want %v", c.row, c.metric, got, ok, c.want)
		}
	}
	if _, ok := rs.get("Redis/ratekit-fixed-window", "p99-µs"); ok {
		t.Error("a metric the row lacks was found")
	}
}

// TestGoalsSmoke judges every goal on the captured run: each finds its rows (a renamed
// row would leave its goal "not measured"), and ratio and verdict follow the figures.
func TestGoalsSmoke(t *testing.T) {
	rs := smoke(t)
	want := map[string]struct {
		ratio string
		met   bool
	}{
		"one key, facade Allow":                                                    {"1.23×", false}, // 148.8 / 120.7
		"1k zipf keys, facade Allow":                                               {"1.52×", false}, // 182.3 / 120.0
		"1M zipf keys, facade Allow":                                               {"1.21×", false}, // 497.7 / 410.8
		"2 goroutines on distinct keys vs 1 (decisions/s)":                         {"0.91×", false}, // 5487317 / 6008123
		"bytes per key (1M keys)":                                                  {"0.98×", true},  // 117.8 / 119.8, ≤ 120
		"Redis token bucket, 64 goroutines (default store)":                        {"0.73×", false}, // 27663 / 37797
		"Redis server CPU per decision, token bucket":                              {"1.51×", false}, // 21.32 / 14.13
		"Redis p50 per call, 1 goroutine, GCRA (default store)":                    {"1.09×", false}, // 59.3 / 54.6
		"Redis p99 per call, 64 goroutines, GCRA (default store)":                  {"0.25×", true},  // 1860 / 7410
		"Redis FixedWindow":                                                        {"0.60×", false}, // 29636 / 49444
		"Redis SlidingWindowCounter":                                               {"0.56×", false}, // 27917 / 49444
		"Redis client bytes per call, token bucket":                                {"1.22×", false}, // 2257 / 1854
		"Redis client allocations per call, token bucket":                          {"0.90×", true},  // 19 / 21
		"one hot key, leased (slices of 100) vs plain (a round trip per decision)": {"65.0×", true},  // 1055737 / 16247
		"Charge vs Allow, one key, local token bucket":                             {"1.02×", true},  // 151.2 / 148.8 (rows added to the capture)
		"Charge vs Allow, Redis token bucket, 64 goroutines":                       {"0.98×", true},  // 27100 / 27663 (rows added to the capture)
	}
	judged := 0
	for _, g := range goals {
		if g.Info {
			continue // TestGoalInfoLine; the captured run predates its row
		}
		judged++
		w, ok := want[g.Work]
		if !ok {
			t.Errorf("unexpected goal %q", g.Work)
			continue
		}
		v := g.judge(rs)
		if !v.Measured {
			t.Errorf("%s: not measured (rows %s)", g.Work, g.rows())
			continue
		}
		if v.Ratio != w.ratio || v.Met != w.met {
			t.Errorf("%s: ratio %s met %v, want %s %v", g.Work, v.Ratio, v.Met, w.ratio, w.met)
		}
	}
	if judged != len(want) {
		t.Errorf("%d goals judged, %d expected", judged, len(want))
	}
	var out strings.Builder
	if met, measured := goalTable(&out, rs); met != 6 || measured != 16 {
		t.Errorf("goalTable: %d met of %d measured, want 6 of 16", met, measured)
	}
	for _, s := range []string{
		"| 2 goroutines on distinct keys vs 1 (decisions/s) | 0.91× | x/time 0.99×, sethvargo 1.09× | 0.91× | ≥ 1.6× | **not met** | LocalScaling: g=2/ratekit-allow / g=1/ratekit-allow |",
		"| Redis server CPU per decision, token bucket | 21.3 srv-cpu-µs/op | redis_rate 14.1 srv-cpu-µs/op, ulule 9.80 srv-cpu-µs/op | 1.51× | ≤ 0.9× | **not met** | Redis: ratekit-token-bucket / redis_rate-gcra |",
		"| bytes per key (1M keys) | 117.8 bytes/key | sethvargo 119.8 bytes/key | 0.98× | ≤ 120 and ≤ 1.0× | met |",
		"\ngoals met: 6 of 16\n",
	} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("goal table lacks %q:\n%s", s, out.String())
		}
	}
}

// TestGoalInfoLine: the unbatched FixedWindow line shows its ratio to ulule beside the
// default store's goal, is neither judged nor counted, and a run without its row shows "–".
func TestGoalInfoLine(t *testing.T) {
	rs := results{Rows: []row{
		{Group: "Redis", Name: "ratekit-fixed-window", Metrics: map[string]float64{"decisions/s": 30000}},
		{Group: "Redis", Name: "ratekit-fixed-window-unbatched", Metrics: map[string]float64{"decisions/s": 90000}},
		{Group: "Redis", Name: "ulule-redis", Metrics: map[string]float64{"decisions/s": 50000}},
	}}
	var out strings.Builder
	met, measured := goalTable(&out, rs)
	if met != 0 || measured != 1 {
		t.Errorf("goalTable: %d met of %d measured, want 0 of 1 (the info line is not counted)", met, measured)
	}
	for _, s := range []string{
		"| Redis FixedWindow | 30000 decisions/s | ulule 50000 decisions/s | 0.60× | ≥ 1.0× | **not met** |",
		"| FixedWindow unbatched vs ulule | 90000 decisions/s | ulule 50000 decisions/s | 1.80× | (shown, not judged) | – | Redis: ratekit-fixed-window-unbatched / ulule-redis |",
		"goals met: 0 of 16 (15 not measured)",
	} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("goal table lacks %q:\n%s", s, out.String())
		}
	}
	out.Reset()
	goalTable(&out, results{})
	if s := "| FixedWindow unbatched vs ulule | – | ulule – | – | (shown, not judged) | – |"; !strings.Contains(out.String(), s) {
		t.Errorf("goal table lacks %q:\n%s", s, out.String())
	}
}

// TestJudgeBounds: each comparison at and beyond its bound, the absolute bound, and
// missing figures.
func TestJudgeBounds(t *testing.T) {
	rows := func(ours, peer float64) results {
		return results{Rows: []row{
			{Group: "G", Name: "ours", Metrics: map[string]float64{"m": ours}},
			{Group: "G", Name: "peer", Metrics: map[string]float64{"m": peer}},
		}}
	}
	g := func(o op, bound, max float64) goal {
		return goal{Work: "w", Ours: figure{Row: "G/ours", Metric: "m"},
			Peer: peer{"p", figure{Row: "G/peer", Metric: "m"}}, Op: o, Bound: bound, Max: max}
	}
	for _, c := range []struct {
		name       string
		g          goal
		ours, peer float64
		met        bool
	}{
		{"at most, at the bound", g(atMost, 0.8, 0), 80, 100, true},
		{"at most, above", g(atMost, 0.8, 0), 81, 100, false},
		{"at least, at the bound", g(atLeast, 1.1, 0), 110, 100, true},
		{"at least, below", g(atLeast, 1.1, 0), 109, 100, false},
		{"below, equal", g(below, 1, 0), 19, 19, false},
		{"below, fewer", g(below, 1, 0), 18, 19, true},
		{"max, ratio met but above max", g(atMost, 1, 120), 121, 125, false},
		{"max, both met", g(atMost, 1, 120), 117, 119, true},
		{"max, under max but ratio missed", g(atMost, 1, 120), 110, 100, false},
	} {
		v := c.g.judge(rows(c.ours, c.peer))
		if !v.Measured || v.Met != c.met {
			t.Errorf("%s: measured %v met %v, want met %v", c.name, v.Measured, v.Met, c.met)
		}
	}
	if v := g(atMost, 1, 0).judge(rows(1, 0)); v.Measured {
		t.Error("a peer of 0 gives a ratio")
	}
	missing := goal{Ours: figure{Row: "G/ours", Metric: "m"}, Peer: peer{"p", figure{Row: "G/gone", Metric: "m"}}}
	if v := missing.judge(rows(1, 1)); v.Measured || v.Ratio != "–" || v.Peer != "p –" {
		t.Errorf("missing peer row: %+v", v)
	}
	gain := goal{Ours: figure{Row: "G/ours", Metric: "m", Per: "G/peer"}, Op: atLeast, Bound: 1.6}
	if v := gain.judge(rows(170, 100)); !v.Measured || !v.Met || v.Ratio != "1.70×" || v.Ours != "1.70×" {
		t.Errorf("gain: %+v", v)
	}
}

// TestDoc: -doc rewrites only what lies between the markers, and again on a second run.
func TestDoc(t *testing.T) {
	path := filepath.Join(t.TempDir(), "b.md")
	before := "# Benchmarks\n\nintro\n\n" + begin + "\nold tables\n" + end + "\n\n## After\n\ntext\n"
	if err := os.WriteFile(path, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	for i := 0; i < 2; i++ {
		out.Reset()
		if err := run(strings.NewReader(sample), &out, "", path); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "# Benchmarks\n\nintro\n\n" + begin + "\n\n" + out.String() + "\n" + end + "\n\n## After\n\ntext\n"
	if string(got) != want {
		t.Errorf("doc\n%s\nwant\n%s", got, want)
	}
	if err := os.WriteFile(path, []byte("no markers\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(strings.NewReader(sample), &out, "", path); err == nil {
		t.Error("no error for a doc without markers")
	}
}
