package sim

import (
	"errors"
	"math"
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
		if r.Offered != 15 || r.Admitted != 10 || r.Denied() != 5 || r.Delayed != 0 {
			t.Errorf("row %d = %+v, want 15 offered, 10 admitted, 5 denied, none delayed", i, r)
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
	want := []Interval{
		{Start: 0, Offered: 30, Admitted: 20},
		{Start: time.Second},
		{Start: 2 * time.Second, Offered: 30, Admitted: 20},
		{Start: 3 * time.Second},
	}
	checkRows(t, rows, want)
}

func TestRunWaitMode(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, tc := range []struct {
		name string
		cfg  Config
		want []Interval
	}{
		{
			// 10 tokens at once; the next 10 refill 100 ms apart, the last at 1 s exactly
			// (MaxWait is inclusive); the other 10 would wait longer.
			name: "token bucket",
			cfg:  Config{Algorithm: algo.TokenBucket{Rate: 10, Burst: 10}, Traffic: Burst, Base: 10, Duration: 2 * time.Second, MaxWait: time.Second},
			want: []Interval{
				{Start: 0, Offered: 30, Admitted: 20, Delayed: 10, TotalDelay: 5500 * ms, MaxDelay: time.Second},
				{Start: time.Second},
			},
		},
		{
			// Windows: a reservation waits for the next window, where the permits of the
			// requests that arrive then are already taken.
			name: "fixed window half-second rows",
			cfg: Config{Algorithm: algo.FixedWindow{Limit: 10, Window: time.Second}, Traffic: Burst, Base: 10,
				Duration: 2 * time.Second, Interval: 500 * ms, MaxWait: 2 * time.Second},
			want: []Interval{
				{Start: 0, Offered: 30, Admitted: 30, Delayed: 20, TotalDelay: 30 * time.Second, MaxDelay: 2 * time.Second},
				{Start: 500 * ms},
				{Start: time.Second},
				{Start: 1500 * ms},
			},
		},
		{
			// Guava: nothing stored at first, so the second request waits 100 ms, the
			// tenth 900 ms, and the 11th (1 s) is within the bound.
			name: "smooth bursty",
			cfg:  Config{Algorithm: algo.SmoothBursty{Rate: 10}, Traffic: Burst, Base: 10, Duration: time.Second, MaxWait: time.Second},
			want: []Interval{
				{Start: 0, Offered: 30, Admitted: 11, Delayed: 10, TotalDelay: 5500 * ms, MaxDelay: time.Second},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rows, err := Run(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			checkRows(t, rows, tc.want)
		})
	}
}

// checkRows compares rows with want, row by row.
func checkRows(tb testing.TB, rows, want []Interval) {
	tb.Helper()
	if len(rows) != len(want) {
		tb.Fatalf("%d rows, want %d: %+v", len(rows), len(want), rows)
	}
	for i := range want {
		if rows[i] != want[i] {
			tb.Errorf("row %d = %+v, want %+v", i, rows[i], want[i])
		}
	}
}

func TestRunIsDeterministicAndConsistent(t *testing.T) {
	t.Parallel()
	algos := []algo.Algorithm{
		algo.FixedWindow{Limit: 10, Window: time.Second},
		algo.SlidingWindowLog{Limit: 10, Window: time.Second},
		algo.SlidingWindowCounter{Limit: 10, Window: time.Second},
		algo.TokenBucket{Rate: 10, Burst: 10},
		algo.LeakyBucket{Rate: 10, Capacity: 10},
		algo.GCRA{Rate: 10, Burst: 10},
		algo.SmoothBursty{Rate: 10},
		algo.SmoothWarmingUp{Rate: 10, Warmup: 2 * time.Second},
	}
	for _, a := range algos {
		for _, p := range Patterns {
			for _, maxWait := range []time.Duration{0, 300 * time.Millisecond} {
				cfg := Config{Algorithm: a, Traffic: p, Base: 10, Duration: 6 * time.Second, Interval: 700 * time.Millisecond, MaxWait: maxWait}
				first, err := Run(cfg)
				if err != nil {
					t.Fatalf("%v %s: %v", a, p, err)
				}
				again, _ := Run(cfg)
				checkRows(t, again, first)
				if got, want := len(first), 9; got != want { // 6 s in rows of 700 ms
					t.Errorf("%v %s: %d rows, want %d", a, p, got, want)
				}
				total := Sum(first)
				if got, want := total.Offered, len(p.Arrivals(10, 6*time.Second)); got != want {
					t.Errorf("%v %s: %d offered, want the %d arrivals", a, p, got, want)
				}
				for i, r := range first {
					if r.Admitted > r.Offered || r.Delayed > r.Admitted || r.MaxDelay > maxWait || r.MeanDelay() > r.MaxDelay {
						t.Errorf("%v %s max wait %v: row %d inconsistent: %+v", a, p, maxWait, i, r)
					}
					if maxWait == 0 && r.Delayed != 0 {
						t.Errorf("%v %s: row %d delayed %d in allow mode", a, p, i, r.Delayed)
					}
				}
			}
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
		if got, want := tc.p.mean()*10*10, float64(tc.max); math.Abs(got-want) > 0.5 {
			t.Errorf("%s: mean() predicts %g arrivals, want %g", tc.p, got, want)
		}
	}
}

func TestRunRejectsBadInput(t *testing.T) {
	t.Parallel()
	gcra := algo.GCRA{Rate: 1, Burst: 1}
	for name, cfg := range map[string]Config{
		"no algorithm":      {Traffic: Steady, Base: 1, Duration: time.Second},
		"bad algorithm":     {Algorithm: algo.TokenBucket{}, Traffic: Steady, Base: 1, Duration: time.Second},
		"zero duration":     {Algorithm: gcra, Traffic: Steady, Base: 1},
		"too long":          {Algorithm: gcra, Traffic: Steady, Base: 1, Duration: 25 * time.Hour},
		"zero base":         {Algorithm: gcra, Traffic: Steady, Duration: time.Second},
		"NaN base":          {Algorithm: gcra, Traffic: Steady, Base: math.NaN(), Duration: time.Second},
		"unknown traffic":   {Algorithm: gcra, Traffic: "wave", Base: 1, Duration: time.Second},
		"negative interval": {Algorithm: gcra, Traffic: Steady, Base: 1, Duration: time.Second, Interval: -time.Second},
		"too many rows":     {Algorithm: gcra, Traffic: Steady, Base: 1, Duration: time.Second, Interval: time.Microsecond},
		"too many requests": {Algorithm: gcra, Traffic: Steady, Base: 1e6, Duration: time.Hour},
	} {
		_, err := Run(cfg)
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		if !errors.Is(err, ErrConfig) && !errors.Is(err, algo.ErrInvalidConfig) {
			t.Errorf("%s: %v wraps neither ErrConfig nor algo.ErrInvalidConfig", name, err)
		}
	}
	if _, err := ParsePattern("wave"); err == nil {
		t.Error("ParsePattern(wave): no error")
	}
}

func TestIntervalDelays(t *testing.T) {
	t.Parallel()
	r := Interval{Offered: 5, Admitted: 4, Delayed: 3, TotalDelay: 301 * time.Millisecond, MaxDelay: 200 * time.Millisecond}
	if got, want := r.Denied(), 1; got != want {
		t.Errorf("Denied = %d, want %d", got, want)
	}
	if got, want := r.MeanDelay(), 100333333*time.Nanosecond; got != want {
		t.Errorf("MeanDelay = %v, want %v", got, want)
	}
	if got := (Interval{}).MeanDelay(); got != 0 {
		t.Errorf("MeanDelay of nothing delayed = %v, want 0", got)
	}
	s := Sum([]Interval{r, {Offered: 2, Admitted: 2, Delayed: 1, TotalDelay: time.Second, MaxDelay: time.Second}})
	if want := (Interval{Offered: 7, Admitted: 6, Delayed: 4, TotalDelay: 1301 * time.Millisecond, MaxDelay: time.Second}); s != want {
		t.Errorf("Sum = %+v, want %+v", s, want)
	}
}
