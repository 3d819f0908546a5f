package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// figure is one number read off a bench run: Metric of the row Row ("Group/Name"), or,
// with Per set, that divided by the same metric of the row Per (a gain, such as the
// decisions/s of 2 goroutines over those of 1).
type figure struct {
	Row, Metric, Per string
}

// value returns the figure in rs, and false when a row or metric it needs is missing.
func (f figure) value(rs results) (float64, bool) {
	v, ok := rs.get(f.Row, f.Metric)
	if !ok || f.Per == "" {
		return v, ok
	}
	d, ok := rs.get(f.Per, f.Metric)
	if !ok || d == 0 {
		return 0, false
	}
	return v / d, true
}

// text formats the figure's value: a gain as "1.24×", a metric with its unit.
func (f figure) text(v float64) string {
	if f.Per != "" {
		return ratio(v)
	}
	return format(v) + " " + f.Metric
}

// op is how a goal's ratio must compare with its bound.
type op int

const (
	atMost  op = iota // ratio ≤ bound (time, bytes, server CPU)
	atLeast           // ratio ≥ bound (decisions/s, gains)
	below             // ratio < bound: strictly fewer
)

// peer is a figure named after whom it measures ("x/time", "redis_rate").
type peer struct {
	Name string
	figure
}

// goal is one target of issue 23: Ours against Peer (ratio = ours / peer) must satisfy Op
// Bound; with no Peer, Ours is itself the ratio (a gain). Max, when not 0, also bounds Ours
// itself. Also are figures shown beside the peer for context, not judged. An Info line is
// shown with its ratio beside the goal it completes, but neither judged nor counted.
type goal struct {
	Work  string
	Ours  figure
	Peer  peer
	Op    op
	Bound float64
	Max   float64
	Also  []peer
	Info  bool
}

// goals are issue 23's targets ("Cheaper per decision than every peer"), each read off
// the rows of one `make bench` run. docs/benchmarks.md shows the table printed from them,
// so the targets live here only.
var goals = []goal{
	{
		Work: "one key, facade Allow",
		Ours: figure{Row: "LocalSingleKey/g=1/ratekit-allow", Metric: "ns/op"},
		Peer: peer{"x/time", figure{Row: "LocalSingleKey/g=1/x-time-rate", Metric: "ns/op"}},
		Op:   atMost, Bound: 0.8,
	},
	{
		Work: "1k zipf keys, facade Allow",
		Ours: figure{Row: "LocalKeyed/keys=1000/ratekit-allow", Metric: "ns/op"},
		Peer: peer{"sethvargo", figure{Row: "LocalKeyed/keys=1000/sethvargo-memorystore", Metric: "ns/op"}},
		Op:   atMost, Bound: 1.0,
	},
	{
		Work: "1M zipf keys, facade Allow",
		Ours: figure{Row: "LocalKeyed/keys=1000000/ratekit-allow", Metric: "ns/op"},
		Peer: peer{"sethvargo", figure{Row: "LocalKeyed/keys=1000000/sethvargo-memorystore", Metric: "ns/op"}},
		Op:   atMost, Bound: 1.0,
	},
	{
		Work: "2 goroutines on distinct keys vs 1 (decisions/s)",
		Ours: figure{Row: "LocalScaling/g=2/ratekit-allow", Metric: "decisions/s", Per: "LocalScaling/g=1/ratekit-allow"},
		Op:   atLeast, Bound: 1.6,
		Also: []peer{
			{"x/time", figure{Row: "LocalScaling/g=2/x-time-rate", Metric: "decisions/s", Per: "LocalScaling/g=1/x-time-rate"}},
			{"sethvargo", figure{Row: "LocalScaling/g=2/sethvargo-memorystore", Metric: "decisions/s", Per: "LocalScaling/g=1/sethvargo-memorystore"}},
		},
	},
	{
		Work: "bytes per key (1M keys)",
		Ours: figure{Row: "LocalMemory/ratekit-allow", Metric: "bytes/key"},
		Peer: peer{"sethvargo", figure{Row: "LocalMemory/sethvargo-memorystore", Metric: "bytes/key"}},
		Op:   atMost, Bound: 1.0, Max: 120,
	},
	{
		// The default store, which batches the concurrent calls (distributed.WithBatching);
		// the unbatched row, one round trip per call as every peer takes, is shown below.
		Work: "Redis token bucket, 64 goroutines (default store)",
		Ours: figure{Row: "Redis/ratekit-token-bucket", Metric: "decisions/s"},
		Peer: peer{"redis_rate", figure{Row: "Redis/redis_rate-gcra", Metric: "decisions/s"}},
		Op:   atLeast, Bound: 1.1,
	},
	{
		Work: "Redis server CPU per decision, token bucket",
		Ours: figure{Row: "Redis/ratekit-token-bucket", Metric: "srv-cpu-µs/op"},
		Peer: peer{"redis_rate", figure{Row: "Redis/redis_rate-gcra", Metric: "srv-cpu-µs/op"}},
		Op:   atMost, Bound: 0.9,
		Also: []peer{{"ulule", figure{Row: "Redis/ulule-redis", Metric: "srv-cpu-µs/op"}}},
	},
	{
		Work: "token bucket unbatched (Batching{Off: true}) vs redis_rate",
		Ours: figure{Row: "Redis/ratekit-token-bucket-unbatched", Metric: "decisions/s"},
		Peer: peer{"redis_rate", figure{Row: "Redis/redis_rate-gcra", Metric: "decisions/s"}},
		Op:   atLeast, Bound: 1.1, Info: true,
	},
	{
		// What one lone call waits (issue 39): batching must cost a caller alone nothing.
		Work: "Redis p50 per call, 1 goroutine, GCRA (default store)",
		Ours: figure{Row: "RedisLatency/g=1/ratekit-gcra", Metric: "p50-µs"},
		Peer: peer{"redis_rate", figure{Row: "RedisLatency/g=1/redis_rate-gcra", Metric: "p50-µs"}},
		Op:   atMost, Bound: 1.0,
		Also: []peer{
			{"unbatched", figure{Row: "RedisLatency/g=1/ratekit-gcra-unbatched", Metric: "p50-µs"}},
			{"ulule", figure{Row: "RedisLatency/g=1/ulule-redis", Metric: "p50-µs"}},
		},
	},
	{
		// The tail under load: batching raises decisions/s; it must not lengthen the tail.
		Work: "Redis p99 per call, 64 goroutines, GCRA (default store)",
		Ours: figure{Row: "RedisLatency/g=64/ratekit-gcra", Metric: "p99-µs"},
		Peer: peer{"redis_rate", figure{Row: "RedisLatency/g=64/redis_rate-gcra", Metric: "p99-µs"}},
		Op:   atMost, Bound: 1.0,
		Also: []peer{
			{"unbatched", figure{Row: "RedisLatency/g=64/ratekit-gcra-unbatched", Metric: "p99-µs"}},
			{"ulule", figure{Row: "RedisLatency/g=64/ulule-redis", Metric: "p99-µs"}},
		},
	},
	{
		Work: "Redis FixedWindow",
		Ours: figure{Row: "Redis/ratekit-fixed-window", Metric: "decisions/s"},
		Peer: peer{"ulule", figure{Row: "Redis/ulule-redis", Metric: "decisions/s"}},
		Op:   atLeast, Bound: 1.0,
	},
	{
		// The goal above judges the default store, which batches; unbatched, each decision
		// is a round trip of its own, as ulule's.
		Work: "FixedWindow unbatched vs ulule",
		Ours: figure{Row: "Redis/ratekit-fixed-window-unbatched", Metric: "decisions/s"},
		Peer: peer{"ulule", figure{Row: "Redis/ulule-redis", Metric: "decisions/s"}},
		Op:   atLeast, Bound: 1.0, Info: true,
	},
	{
		Work: "Redis SlidingWindowCounter",
		Ours: figure{Row: "Redis/ratekit-sliding-counter", Metric: "decisions/s"},
		Peer: peer{"ulule", figure{Row: "Redis/ulule-redis", Metric: "decisions/s"}},
		Op:   atLeast, Bound: 1.0,
	},
	{
		Work: "SlidingWindowCounter unbatched vs ulule",
		Ours: figure{Row: "Redis/ratekit-sliding-counter-unbatched", Metric: "decisions/s"},
		Peer: peer{"ulule", figure{Row: "Redis/ulule-redis", Metric: "decisions/s"}},
		Op:   atLeast, Bound: 1.0, Info: true,
	},
	{
		// Charge (issue 36) is a request of another kind through the same pipeline and
		// the same store call: no more than Allow, within 5% (two runs of one row differ
		// by about that).
		Work: "Charge vs Allow, one key, local token bucket",
		Ours: figure{Row: "LocalSingleKey/g=1/ratekit-charge", Metric: "ns/op"},
		Peer: peer{"Allow", figure{Row: "LocalSingleKey/g=1/ratekit-allow", Metric: "ns/op"}},
		Op:   atMost, Bound: 1.05,
	},
	{
		Work: "Charge vs Allow, Redis token bucket, 64 goroutines",
		Ours: figure{Row: "Redis/ratekit-token-bucket-charge", Metric: "decisions/s"},
		Peer: peer{"Allow", figure{Row: "Redis/ratekit-token-bucket", Metric: "decisions/s"}},
		Op:   atLeast, Bound: 0.95,
		Also: []peer{{"Allow srv-cpu", figure{Row: "Redis/ratekit-token-bucket", Metric: "srv-cpu-µs/op"}}},
	},
	{
		Work: "Redis client bytes per call, token bucket",
		Ours: figure{Row: "Redis/ratekit-token-bucket", Metric: "B/op"},
		Peer: peer{"redis_rate", figure{Row: "Redis/redis_rate-gcra", Metric: "B/op"}},
		Op:   below, Bound: 1.0,
	},
	{
		Work: "Redis client allocations per call, token bucket",
		Ours: figure{Row: "Redis/ratekit-token-bucket", Metric: "allocs/op"},
		Peer: peer{"redis_rate", figure{Row: "Redis/redis_rate-gcra", Metric: "allocs/op"}},
		Op:   below, Bound: 1.0,
	},
	{
		// "Plain" as issue 13 set the goal and issue 23 kept it: one script and one round
		// trip per decision (Batching{Off: true}). The hot key's default-store row was that
		// store until batching became the default; it is shown on the next line.
		Work: "one hot key, leased (slices of 100) vs plain (a round trip per decision)",
		Ours: figure{Row: "RedisHotKey/ratekit-token-bucket-leased-100", Metric: "decisions/s"},
		Peer: peer{"plain", figure{Row: "RedisHotKey/ratekit-token-bucket-unbatched", Metric: "decisions/s"}},
		Op:   atLeast, Bound: 10,
	},
	{
		Work: "one hot key, leased vs the default store (batching)",
		Ours: figure{Row: "RedisHotKey/ratekit-token-bucket-leased-100", Metric: "decisions/s"},
		Peer: peer{"default store", figure{Row: "RedisHotKey/ratekit-token-bucket", Metric: "decisions/s"}},
		Op:   atLeast, Bound: 10, Info: true,
	},
	{
		// No lease of 100 permits does more than 100 per round trip of its refill (see
		// sliceRoundTrip in the bench): how near the leased row comes to that.
		Work: "one hot key, leased vs its bound: 100 permits per slice round trip",
		Ours: figure{Row: "RedisHotKey/ratekit-token-bucket-leased-100", Metric: "decisions/s"},
		Peer: peer{"bound", figure{Row: "RedisHotKey/ratekit-token-bucket-leased-100", Metric: "bound-decisions/s"}},
		Op:   atLeast, Bound: 0.5, Info: true,
	},
}

// verdict is a goal judged on one run.
type verdict struct {
	Ours, Peer, Ratio string // the table's cells
	Measured, Met     bool
	ratio             float64
}

// judge reads g's figures off rs and compares.
func (g goal) judge(rs results) verdict {
	var v verdict
	ours, ok := g.Ours.value(rs)
	v.Measured = ok
	v.Ours = "–"
	if ok {
		v.Ours = g.Ours.text(ours)
	}
	var peers []string
	if g.Peer.Row != "" {
		p, pok := g.Peer.value(rs)
		cell := "–"
		if pok {
			cell = g.Peer.text(p)
		}
		peers = append(peers, g.Peer.Name+" "+cell)
		v.Measured = v.Measured && pok && p != 0
		if v.Measured {
			v.ratio = ours / p
		}
	} else {
		v.ratio = ours
	}
	for _, a := range g.Also {
		if x, ok := a.value(rs); ok {
			peers = append(peers, a.Name+" "+a.text(x))
		}
	}
	v.Peer = strings.Join(peers, ", ")
	if !v.Measured {
		v.Ratio = "–"
		return v
	}
	v.Ratio = ratio(v.ratio)
	switch g.Op {
	case atMost:
		v.Met = v.ratio <= g.Bound
	case atLeast:
		v.Met = v.ratio >= g.Bound
	case below:
		v.Met = v.ratio < g.Bound
	}
	if g.Max != 0 && ours > g.Max {
		v.Met = false
	}
	return v
}

// target is the goal's cell: "≤ 0.8×", "≥ 1.6×", "≤ 120 and ≤ 1.0×", "< 1.0× (fewer)".
func (g goal) target() string {
	var s string
	b := strconv.FormatFloat(g.Bound, 'f', -1, 64)
	if g.Bound == math.Trunc(g.Bound) {
		b = strconv.FormatFloat(g.Bound, 'f', 1, 64)
	}
	switch g.Op {
	case atMost:
		s = "≤ " + b + "×"
	case atLeast:
		s = "≥ " + b + "×"
	case below:
		s = "< " + b + "× (fewer)"
	}
	if g.Max != 0 {
		s = "≤ " + format(g.Max) + " and " + s
	}
	return s
}

// rows names the rows the goal reads: "LocalSingleKey/g=1: ratekit-allow / x-time-rate".
func (g goal) rows() string {
	other := g.Peer.Row
	if other == "" {
		other = g.Ours.Per
	}
	return commonPrefix(g.Ours.Row, other)
}

// commonPrefix writes a and b as "group: a-rest / b-rest" when they share a group.
func commonPrefix(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	j := strings.LastIndexByte(a[:i], '/')
	if j < 0 {
		return a + " / " + b
	}
	return a[:j] + ": " + a[j+1:] + " / " + b[j+1:]
}

// ratio formats a ratio: 0.77×, 21.9×.
func ratio(v float64) string {
	if v >= 10 {
		return fmt.Sprintf("%.1f×", v)
	}
	return fmt.Sprintf("%.2f×", v)
}

// goalTable prints the goals judged on rs, then a line counting those met, and returns
// how many were met and measured.
func goalTable(w io.Writer, rs results) (met, measured int) {
	fmt.Fprintln(w, "| work | ours | peer | ratio | goal | met | rows |")
	fmt.Fprintln(w, "|---|---:|---|---:|---|---|---|")
	judged := 0
	for _, g := range goals {
		v := g.judge(rs)
		if g.Info {
			fmt.Fprintf(w, "| %s | %s | %s | %s | (shown, not judged) | – | %s |\n",
				g.Work, v.Ours, v.Peer, v.Ratio, g.rows())
			continue
		}
		judged++
		status := "not measured"
		if v.Measured {
			measured++
			status = "**not met**"
			if v.Met {
				met++
				status = "met"
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s |\n",
			g.Work, v.Ours, v.Peer, v.Ratio, g.target(), status, g.rows())
	}
	fmt.Fprintf(w, "\ngoals met: %d of %d", met, judged)
	if n := judged - measured; n > 0 {
		fmt.Fprintf(w, " (%d not measured)", n)
	}
	fmt.Fprintln(w)
	return met, measured
}
