package rlheader

import (
	"math"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

func TestRetryAfterSeconds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		d    time.Duration
		want int64
	}{
		{0, 1}, // never "0"
		{time.Nanosecond, 1},
		{250 * time.Millisecond, 1},
		{time.Second, 1},
		{time.Second + time.Nanosecond, 2},
		{1200 * time.Millisecond, 2},
		{17 * time.Second, 17},
		{59*time.Second + 999*time.Millisecond, 60},
		{time.Duration(algo.MaxMicros) * time.Microsecond, 1_000_000_000},
		{algo.Never - 1, 9_223_372_037}, // the largest Duration, rounded up
	} {
		if got := RetryAfterSeconds(c.d); got != c.want {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", c.d, got, c.want)
		}
	}
}

func TestCeilSeconds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		d    time.Duration
		want int64
	}{
		{-time.Second, 0},
		{0, 0},
		{time.Nanosecond, 1},
		{time.Second, 1},
		{1500 * time.Millisecond, 2},
		{time.Hour, 3600},
	} {
		if got := ceilSeconds(c.d); got != c.want {
			t.Errorf("ceilSeconds(%v) = %d, want %d", c.d, got, c.want)
		}
	}
}

func TestPolicyWindow(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a    algo.Algorithm
		want int64
		ok   bool
	}{
		{algo.FixedWindow{Limit: 100, Window: time.Minute}, 60, true},
		{algo.FixedWindow{Limit: 100, Window: 1500 * time.Millisecond}, 2, true},
		{algo.FixedWindow{Limit: 100, Window: 100 * time.Millisecond}, 1, true},
		{algo.SlidingWindowLog{Limit: 5, Window: time.Hour}, 3600, true},
		{algo.SlidingWindowCounter{Limit: 5, Window: 24 * time.Hour}, 86400, true},
		{algo.TokenBucket{Rate: 10, Burst: 20}, 2, true},
		{algo.TokenBucket{Rate: 3, Burst: 10}, 4, true}, // 3.33 s
		{algo.TokenBucket{Rate: 1e12, Burst: 1}, 1, true},
		{algo.TokenBucket{Rate: 1e-12, Burst: 1 << 53}, sfMaxInt, true},
		{algo.GCRA{Rate: 0.5, Burst: 3}, 6, true},
		{algo.LeakyBucket{Rate: 2, Capacity: 5}, 3, true},
		{algo.SmoothBursty{Rate: 5}, 1, true},
		{algo.SmoothBursty{Rate: 5, MaxBurstSeconds: 2.5}, 3, true},
		{algo.SmoothBursty{Rate: math.Inf(1), MaxBurstSeconds: 4}, 4, true},
		{algo.SmoothWarmingUp{Rate: 5, Warmup: time.Second}, 0, false},
	} {
		got, ok := policyWindow(c.a)
		if got != c.want || ok != c.ok {
			t.Errorf("policyWindow(%#v) = %d, %v; want %d, %v", c.a, got, ok, c.want, c.ok)
		}
	}
}

func TestHeaderValues(t *testing.T) {
	t.Parallel()
	if got, want := PolicyValue(Item{Name: `"p"`, Q: 100, W: 60}, "", ""), `"p";q=100;w=60`; got != want {
		t.Errorf("policyValue = %q, want %q", got, want)
	}
	if got, want := PolicyValue(Item{Name: `"p"`, Q: 1 << 53}, "", ""), `"p";q=999999999999999`; got != want {
		t.Errorf("policyValue (clamped, no w) = %q, want %q", got, want)
	}
	if got, want := RateLimitValue(Item{Name: `"p"`, R: 42, T: 17}, ""), `"p";r=42;t=17`; got != want {
		t.Errorf("rateLimitValue = %q, want %q", got, want)
	}
	if got, want := RateLimitValue(Item{Name: `"p"`, R: -3, T: -1}, ""), `"p";r=0`; got != want {
		t.Errorf("rateLimitValue (negative r, no t) = %q, want %q", got, want)
	}
	d := algo.Decision{Allowed: true, Limit: 10, Remaining: 3, ResetAfter: algo.Never}
	if got := resetSeconds(d, 0); got != -1 {
		t.Errorf("resetSeconds(Never) = %d, want -1 (left out)", got)
	}
	d.ResetAfter = 2500 * time.Millisecond
	if got := resetSeconds(d, time.Second); got != 2 {
		t.Errorf("resetSeconds(2.5 s after a 1 s wait) = %d, want 2", got)
	}
	if got := resetSeconds(d, 3*time.Second); got != 0 {
		t.Errorf("resetSeconds(waited past reset) = %d, want 0", got)
	}
}
