package sim

import (
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

func TestRunFixedWindowAdmitsLimitPerWindow(t *testing.T) {
	t.Parallel()
	rows, err := Run(Config{
		Algorithm: algo.FixedWindow{Limit: 10, Window: time.Second},
		Traffic:   Steady, Base: 10, Duration: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(rows), 5; got != want {
		t.Fatalf("%d rows, want %d", got, want)
	}
	for i, r := range rows {
		if r.Offered != 15 || r.Admitted != 10 {
			t.Errorf("row %d: offered %d admitted %d, want 15 and 10", i, r.Offered, r.Admitted)
		}
	}
}

func TestRunTokenBucketBurst(t *testing.T) {
	t.Parallel()
	rows, err := Run(Config{
		Algorithm: algo.TokenBucket{Rate: 10, Burst: 20},
		Traffic:   Burst, Base: 10, Duration: 4 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	// A burst of 30 at t=0 takes the 20 stored tokens; 2 s later 20 more have refilled.
	want := []Interval{{0, 30, 20}, {time.Second, 0, 0}, {2 * time.Second, 30, 20}, {3 * time.Second, 0, 0}}
	for i := range want {
		if rows[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, rows[i], want[i])
		}
	}
}

func TestPatternsOfferTheirRates(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		p        Pattern
		min, max int
	}{
		{Steady, 150, 150}, // 1.5 × 10 × 10 s
		{Burst, 150, 150},  // 30 at 0, 2, 4, 6, 8 s
		{Spike, 95, 95},    // 5/s for 9 s, 50/s for 1 s
		{Ramp, 149, 150},   // ∫ 30·t/10 dt over 10 s = 150, less float rounding of the last one
	} {
		if got := len(tc.p.Arrivals(10, 10*time.Second)); got < tc.min || got > tc.max {
			t.Errorf("%s: %d arrivals in 10 s at base 10, want [%d, %d]", tc.p, got, tc.min, tc.max)
		}
	}
}

func TestRunRejectsBadInput(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]Config{
		"no algorithm":  {Traffic: Steady, Base: 1, Duration: time.Second},
		"bad algorithm": {Algorithm: algo.TokenBucket{}, Traffic: Steady, Base: 1, Duration: time.Second},
		"zero duration": {Algorithm: algo.GCRA{Rate: 1, Burst: 1}, Traffic: Steady, Base: 1},
		"zero base":     {Algorithm: algo.GCRA{Rate: 1, Burst: 1}, Traffic: Steady, Duration: time.Second},
	} {
		if _, err := Run(cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := ParsePattern("wave"); err == nil {
		t.Error("ParsePattern(wave): no error")
	}
}
