package adaptivesim

import (
	"errors"
	"testing"
	"time"

	"github.com/ratekit/limiter/adaptive"
)

// TestGradientRecoversFromSlowdown: the workers did not change, only their speed, so the
// limit must come back to them. It used to fall to 1 and stay there (about 15 ok/s where
// the workers serve 133/s) until LongWindow (10 minutes) had aged the latency floor; the
// requirement is at least half the workers 60 s after the step, and every request the
// workers can serve served.
func TestGradientRecoversFromSlowdown(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		capacity int
		from, to time.Duration
		at       time.Duration
		load     float64
	}{
		{8, 20 * time.Millisecond, 60 * time.Millisecond, 3700 * time.Millisecond, 3},
		{100, 50 * time.Millisecond, 150 * time.Millisecond, 5 * time.Second, 3},
		{100, 50 * time.Millisecond, 75 * time.Millisecond, 5 * time.Second, 3},
		{100, 50 * time.Millisecond, 100 * time.Millisecond, 5 * time.Second, 1.5}, // 3× what is served after
	} {
		rows, err := Run(Config{Algorithm: adaptive.Gradient{}, Capacity: tc.capacity, Latency: tc.from, Load: tc.load,
			Duration: tc.at + 65*time.Second, Interval: 500 * time.Millisecond, SlowAt: tc.at, SlowTo: tc.to})
		if err != nil {
			t.Fatal(err)
		}
		half := float64(tc.capacity) / 2
		lowest, dip := 1e9, 1e9
		completed, span := 0, 0
		for _, r := range rows {
			if r.Start < tc.at {
				continue
			}
			dip = min(dip, r.Limit)
			if r.Start >= tc.at+60*time.Second && r.Start+500*time.Millisecond <= tc.at+65*time.Second { // whole rows
				lowest = min(lowest, r.Limit)
				completed += r.Completed
				span++
			}
		}
		served := float64(completed) / (float64(span) * 0.5)
		workers := float64(tc.capacity) / tc.to.Seconds()
		if lowest < half || served < 0.9*workers {
			t.Errorf("%d workers, %v → %v at %v: from 60 s after the step the limit was as low as %.1f (want ≥ %.1f) and %.0f/s were served (want ≥ 90%% of %.0f/s)",
				tc.capacity, tc.from, tc.to, tc.at, lowest, half, served, workers)
			continue
		}
		t.Logf("%d workers, %v → %v, load %g: lowest limit after the step %.1f; from 60 s after it, lowest limit %.1f, %.0f/s served of %.0f/s",
			tc.capacity, tc.from, tc.to, tc.load, dip, lowest, served, workers)
	}
}

// TestAIMDTimeoutBelowServiceTime pins what docs/adaptive.md says of AIMD's Timeout: once
// the service time exceeds it, every request is a drop by definition, and the limit falls
// to Min and stays there. It is a setting to revise with the service, not a defect the
// algorithm could correct: a slow success and a timeout are the same thing to it.
func TestAIMDTimeoutBelowServiceTime(t *testing.T) {
	t.Parallel()
	rows, err := Run(Config{Algorithm: adaptive.AIMD{Timeout: 40 * time.Millisecond}, Capacity: 8, Latency: 20 * time.Millisecond,
		Load: 3, Duration: 30 * time.Second, Interval: 500 * time.Millisecond, SlowAt: 3700 * time.Millisecond, SlowTo: 60 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Start >= 10*time.Second && r.Limit > 1 {
			t.Fatalf("at %v the limit is %.1f; with every request slower than Timeout it stays at Min (1)", r.Start, r.Limit)
		}
	}
}

// TestSlowdownConfig checks the service-time step itself: each row reports the service
// time at its end, and a step that is not a slow-down is refused.
func TestSlowdownConfig(t *testing.T) {
	t.Parallel()
	cfg := Config{Algorithm: adaptive.Fixed{Limit: 10}, Capacity: 10, Latency: 10 * time.Millisecond, Load: 0.5,
		Duration: 3 * time.Second, SlowAt: 1500 * time.Millisecond, SlowTo: 20 * time.Millisecond}
	rows, err := Run(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond} {
		if rows[i].ServiceTime != want {
			t.Errorf("row %d: ServiceTime %v, want %v", i, rows[i].ServiceTime, want)
		}
	}
	// Half the load, no queueing: the last second's requests take the new service time.
	if got := rows[2].MeanLatency(); got != 20*time.Millisecond {
		t.Errorf("after the step: mean latency %v, want 20ms", got)
	}
	for name, mut := range map[string]func(*Config){
		"slow-at < 0":           func(c *Config) { c.SlowAt = -time.Second },
		"slow-to 0":             func(c *Config) { c.SlowTo = 0 },
		"slow-to below latency": func(c *Config) { c.SlowTo = 5 * time.Millisecond },
	} {
		c := cfg
		mut(&c)
		if _, err := Run(c); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: Run = %v, want ErrConfig", name, err)
		}
	}
}
