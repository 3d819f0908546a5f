package algo_test

import (
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

func TestGCRA(t *testing.T) {
	t.Parallel()
	ms, µs := time.Millisecond, time.Microsecond
	g := algo.GCRA{Rate: 4, Burst: 4}
	tests := []struct {
		name  string
		a     algo.Algorithm
		steps []step
	}{
		// The same table as the token bucket's: the same admissions, Remaining and waits.
		{"exhaust, refill, reserve, refund", g, bucketSteps()},
		{"the same table today", g, shift(bucketSteps(), today)},
		{"refund never moves the TAT before now", g, []step{
			refundStep(0, 3, 0), // nothing to refund on a fresh key
			{now: 30 * sec, n: 4, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			refundStep(30*sec+500*msec, 100, 30*sec),
			{now: 30*sec + 500*msec, n: 4, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			{now: 30*sec + 500*msec, n: 1, want: algo.Decision{RetryAfter: 250 * ms, ResetAfter: time.Second}},
		}},
		{"time going backwards creates no permits", g, []step{
			{now: 20 * sec, n: 4, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			// The TAT is 21s: from 19s the next grant is 1.25s away (at 20.25s, as if asked
			// at 20s), and the key is fresh 2s later.
			{now: 19 * sec, n: 1, want: algo.Decision{RetryAfter: 1250 * ms, ResetAfter: 2 * time.Second}},
			{now: 20*sec + 250*msec, n: 1, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
		}},
		{"rate 1e6, today", algo.GCRA{Rate: 1e6, Burst: 3}, []step{
			{now: today, n: 3, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: 3 * µs}},
			{now: today, n: 1, want: algo.Decision{RetryAfter: µs, ResetAfter: 3 * µs}},
			{now: today + 1, n: 1, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: 3 * µs}},
			{now: today + 1, n: 1, want: algo.Decision{RetryAfter: µs, ResetAfter: 3 * µs}},
		}},
		{"rate 1e-6", algo.GCRA{Rate: 1e-6, Burst: 3}, []step{
			{now: today, n: 3, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Duration(3e12) * µs}},
			{now: today, n: 1, maxWait: algo.Forever, want: algo.Decision{Allowed: true, Remaining: 0,
				ResetAfter: time.Duration(4e12) * µs, Wait: time.Duration(1e12) * µs, At: today + 1e12}},
			{now: today, n: 3, want: algo.Decision{RetryAfter: time.Duration(4e12) * µs,
				ResetAfter: time.Duration(4e12) * µs}},
		}},
		// The largest burst Validate accepts at this rate: Burst/Rate = MaxMicros.
		{"burst 1e15", algo.GCRA{Rate: 1e6, Burst: 1e15}, []step{
			{now: 0, n: 1, want: algo.Decision{Allowed: true, Remaining: 1e15 - 1, ResetAfter: µs}},
			{now: 0, n: 1e15 - 1, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: algo.Never}},
			{now: 0, n: 1, want: algo.Decision{RetryAfter: µs, ResetAfter: algo.Never}},
			{now: 0, n: 1e15 + 1, want: algo.Decision{RetryAfter: algo.Never, ResetAfter: algo.Never}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runSteps(t, tt.a, tt.steps)
		})
	}
}

// TestGCRAHighRateToday shows why GCRA's Rate stops at 1e6 per second: near today's
// instants its TAT resolves 1/4 µs, and an emission interval that small still moves it,
// so a burst of 1 admits one permit per µs and no more.
func TestGCRAHighRateToday(t *testing.T) {
	t.Parallel()
	g := algo.GCRA{Rate: 1e6, Burst: 1}
	st := g.NewState()
	var admitted int
	for now := today; now < today+1000; now++ {
		for range 10 {
			if g.Apply(st, now, algo.Request{N: 1}).Allowed {
				admitted++
			}
		}
	}
	if got, want := admitted, 1000; got != want {
		t.Fatalf("admitted %d permits in 1000µs at 1e6/s with burst 1, want %d", got, want)
	}
}

// shift moves every instant of a table by d.
func shift(steps []step, d int64) []step {
	out := make([]step, len(steps))
	for i, s := range steps {
		s.now += d
		if s.refund {
			s.at += d
		}
		if s.want.At != 0 {
			s.want.At += d
		}
		out[i] = s
	}
	return out
}
