package adaptivesim

import (
	"encoding/xml"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter/adaptive"
)

// algorithms are the adaptive algorithms as the CLI configures them for a server whose
// service time is latency: AIMD counts a request 20% slower than that as a drop.
func algorithms(latency time.Duration) map[string]adaptive.Algorithm {
	return map[string]adaptive.Algorithm{
		"aimd":     adaptive.AIMD{Timeout: latency * 12 / 10},
		"gradient": adaptive.Gradient{},
	}
}

// settledAt returns the start of the first interval from which, to the end of rows,
// every interval's mean limit is within ±tol of its capacity, and whether there is one.
func settledAt(rows []Interval, tol float64) (time.Duration, bool) {
	at, ok := time.Duration(0), false
	for _, r := range rows {
		c := float64(r.Capacity)
		if math.Abs(r.Limit-c) > tol*c {
			ok = false
			continue
		}
		if !ok {
			at, ok = r.Start, true
		}
	}
	return at, ok
}

// worst returns the largest relative distance of the mean limit from the capacity over
// the intervals starting at or after from.
func worst(rows []Interval, from time.Duration) float64 {
	w := 0.0
	for _, r := range rows {
		if r.Start >= from {
			w = max(w, math.Abs(r.Limit-float64(r.Capacity))/float64(r.Capacity))
		}
	}
	return w
}

func TestConvergesToCapacity(t *testing.T) {
	t.Parallel()
	for _, capacity := range []int{10, 100, 400} {
		for name, a := range algorithms(50 * time.Millisecond) {
			rows, err := Run(Config{Algorithm: a, Capacity: capacity, Latency: 50 * time.Millisecond,
				Load: 3, Duration: 30 * time.Second, Interval: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			at, ok := settledAt(rows, 0.2)
			if !ok || at > 10*time.Second {
				t.Errorf("%s, capacity %d: limit not within 20%% of the capacity from 10 s on (settled %v at %v; worst after 10 s %.0f%%)",
					name, capacity, ok, at, 100*worst(rows, 10*time.Second))
				continue
			}
			t.Logf("%s, capacity %d: within 20%% from %v on; worst after 10 s %.1f%%, mean limit of the last second %.1f",
				name, capacity, at, 100*worst(rows, 10*time.Second), rows[len(rows)-1].Limit)
		}
	}
}

func TestLatencyBoundedUnderOverload(t *testing.T) {
	t.Parallel()
	const latency = 50 * time.Millisecond
	for name, a := range algorithms(latency) {
		rows, err := Run(Config{Algorithm: a, Capacity: 100, Latency: latency, Load: 3,
			Duration: 60 * time.Second, Interval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var maxMean, maxLat time.Duration
		admitted := 0
		for _, r := range rows {
			maxLat = max(maxLat, r.MaxLatency)
			if r.Start >= 10*time.Second {
				maxMean = max(maxMean, r.MeanLatency())
				admitted += r.Admitted
			}
		}
		// Without a limit the queue, and the latency, would grow by 2 s every second.
		if maxLat > 2*latency || maxMean > latency*13/10 {
			t.Errorf("%s: under 3× overload latency reached %v (mean per second up to %v), want ≤ %v (mean ≤ %v)",
				name, maxLat, maxMean, 2*latency, latency*13/10)
		}
		// Bounded latency must not come from starving the server.
		if served := float64(admitted) / 50; served < 0.9*100/latency.Seconds() {
			t.Errorf("%s: admitted %.0f/s, want at least 90%% of the server's %.0f/s", name, served, 100/latency.Seconds())
		}
		t.Logf("%s: max latency %v, worst mean per second after 10 s %v", name, maxLat, maxMean)
	}
}

func TestFollowsCapacityDrop(t *testing.T) {
	t.Parallel()
	for _, drop := range [][2]int{{100, 50}, {400, 100}, {50, 100}} {
		for name, a := range algorithms(50 * time.Millisecond) {
			rows, err := Run(Config{Algorithm: a, Capacity: drop[0], Latency: 50 * time.Millisecond, Load: 3,
				Duration: 60 * time.Second, Interval: 100 * time.Millisecond, DropAt: 30 * time.Second, DropTo: drop[1]})
			if err != nil {
				t.Fatal(err)
			}
			at, ok := settledAt(rows, 0.2)
			if !ok || at > 35*time.Second || at < 30*time.Second && worst(rows, 0) > 0.2 {
				t.Errorf("%s, capacity %d → %d at 30 s: limit not within 20%% of the new capacity 5 s later (settled %v at %v; worst after 35 s %.0f%%)",
					name, drop[0], drop[1], ok, at, 100*worst(rows, 35*time.Second))
				continue
			}
			t.Logf("%s, capacity %d → %d at 30 s: within 20%% from %v on (%v after the change), worst after 35 s %.1f%%",
				name, drop[0], drop[1], at, at-30*time.Second, 100*worst(rows, 35*time.Second))
		}
	}
}

// A fixed limit is what the adaptive ones are compared with: one too small wastes the
// server, one too big queues. The test pins the model itself.
func TestFixedLimitsShowTheModel(t *testing.T) {
	t.Parallel()
	const latency = 50 * time.Millisecond
	run := func(limit int) Interval {
		rows, err := Run(Config{Algorithm: adaptive.Fixed{Limit: limit}, Capacity: 100, Latency: latency,
			Load: 3, Duration: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return rows[len(rows)-1]
	}
	if r := run(50); r.Admitted != 1000 || r.MeanLatency() != latency {
		t.Errorf("limit 50: admitted %d at %v, want 1000 at %v", r.Admitted, r.MeanLatency(), latency)
	}
	if r := run(300); r.Admitted != 2000 || r.MeanLatency() != 3*latency {
		t.Errorf("limit 300: admitted %d at %v, want 2000 at %v", r.Admitted, r.MeanLatency(), 3*latency)
	}
}

func TestDeterministic(t *testing.T) {
	t.Parallel()
	cfg := Config{Algorithm: adaptive.Gradient{}, Capacity: 100, Latency: 20 * time.Millisecond, Duration: 10 * time.Second,
		DropAt: 5 * time.Second, DropTo: 30}
	a, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Run(cfg)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("interval %d differs between two runs: %+v and %+v", i, a[i], b[i])
		}
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	ok := Config{Algorithm: adaptive.Gradient{}, Capacity: 10, Latency: time.Millisecond, Duration: time.Second}
	for name, mut := range map[string]func(*Config){
		"no algorithm":  func(c *Config) { c.Algorithm = nil },
		"capacity 0":    func(c *Config) { c.Capacity = 0 },
		"latency 0":     func(c *Config) { c.Latency = 0 },
		"load NaN":      func(c *Config) { c.Load = math.NaN() },
		"duration 0":    func(c *Config) { c.Duration = 0 },
		"too many rows": func(c *Config) { c.Interval = time.Microsecond },
		"drop to 0":     func(c *Config) { c.DropAt = time.Millisecond },
		"too much":      func(c *Config) { c.Capacity = MaxCapacity; c.Duration = time.Hour },
	} {
		c := ok
		mut(&c)
		if _, err := Run(c); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: Run = %v, want ErrConfig", name, err)
		}
	}
	if _, err := Run(ok); err != nil {
		t.Fatalf("valid config: %v", err)
	}
}

func TestChart(t *testing.T) {
	t.Parallel()
	rows, err := Run(Config{Algorithm: adaptive.Gradient{}, Capacity: 10, Latency: 10 * time.Millisecond, Duration: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewChart("a <title>", "sub", time.Second, 10*time.Millisecond, []Result{{Name: "gradient", Rows: rows}})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := c.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	svg := b.String()
	if err := xml.Unmarshal([]byte(svg), new(struct{})); err != nil {
		t.Fatalf("not XML: %v", err)
	}
	// Both panels, each with its y label, its reference and the run's line.
	for want, n := range map[string]int{
		`data-panel="capacity, gradient"`: 1, `data-panel="service time, gradient"`: 1,
		">in-flight limit</text>": 1, ">mean latency (ms)</text>": 1,
		`data-name="capacity"`: 1, `data-name="service time"`: 1, `data-name="gradient"`: 2,
		"a &lt;title&gt;": 1,
	} {
		if got := strings.Count(svg, want); got != n {
			t.Errorf("SVG has %s %d times, want %d", want, got, n)
		}
	}
	if _, err := NewChart("", "", time.Second, time.Millisecond, nil); !errors.Is(err, ErrConfig) {
		t.Errorf("no runs: %v", err)
	}
	if _, err := NewChart("", "", time.Second, time.Millisecond, []Result{{Rows: rows}, {Rows: rows[1:]}}); !errors.Is(err, ErrConfig) {
		t.Errorf("runs of different lengths: %v", err)
	}
}
