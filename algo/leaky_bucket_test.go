package algo_test

import (
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

func TestLeakyBucket(t *testing.T) {
	t.Parallel()
	ms, µs := time.Millisecond, time.Microsecond
	lb := algo.LeakyBucket{Rate: 4, Capacity: 4}
	tests := []struct {
		name  string
		a     algo.Algorithm
		steps []step
	}{
		{"meter: allowed while N fits, leaking at Rate", lb, []step{
			{now: 0, n: 4, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			// Level 4: one unit fits once it has leaked to 3.
			{now: 0, n: 1, want: algo.Decision{RetryAfter: 250 * ms, ResetAfter: time.Second}},
			{now: 250 * msec, n: 1, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			{now: 1250 * msec, n: 2, want: algo.Decision{Allowed: true, Remaining: 2, ResetAfter: 500 * ms}},
			{now: 1250 * msec, n: 5, want: algo.Decision{Remaining: 2, RetryAfter: algo.Never, ResetAfter: 500 * ms}},
			{now: 1250 * msec, n: 0, want: algo.Decision{Remaining: 2, RetryAfter: algo.Never, ResetAfter: 500 * ms}},
			{now: 1250 * msec, n: -1, want: algo.Decision{Remaining: 2, RetryAfter: algo.Never, ResetAfter: 500 * ms}},
		}},
		{"shaping queue: grants spaced evenly at Rate", lb, []step{
			{now: 10 * sec, n: 1, maxWait: time.Second, want: algo.Decision{Allowed: true,
				Remaining: 3, ResetAfter: 250 * ms}},
			{now: 10 * sec, n: 1, maxWait: time.Second, want: algo.Decision{Allowed: true,
				Remaining: 2, ResetAfter: 500 * ms, Wait: 250 * ms, At: 10*sec + 250*msec}},
			{now: 10 * sec, n: 1, maxWait: time.Second, want: algo.Decision{Allowed: true,
				Remaining: 1, ResetAfter: 750 * ms, Wait: 500 * ms, At: 10*sec + 500*msec}},
			// The queue ahead (3 units) takes 750ms to leak out: more than MaxWait 625ms.
			// After 125ms it takes 625ms.
			{now: 10 * sec, n: 1, maxWait: 625 * ms, want: algo.Decision{Remaining: 1,
				RetryAfter: 125 * ms, ResetAfter: 750 * ms}},
			{now: 10*sec + 125*msec, n: 1, maxWait: 625 * ms, want: algo.Decision{Allowed: true,
				Remaining: 0, ResetAfter: 875 * ms, Wait: 625 * ms, At: 10*sec + 750*msec}},
			// Level 3.5: the queue is full (3.5 + 1 > 4) whatever MaxWait.
			{now: 10*sec + 125*msec, n: 1, maxWait: time.Hour, want: algo.Decision{Remaining: 0,
				RetryAfter: 125 * ms, ResetAfter: 875 * ms}},
			{now: 10*sec + 250*msec, n: 1, maxWait: time.Hour, want: algo.Decision{Allowed: true,
				Remaining: 0, ResetAfter: time.Second, Wait: 750 * ms, At: 11 * sec}},
		}},
		{"a meter request does not queue", lb, []step{
			{now: 20 * sec, n: 1, maxWait: time.Second, want: algo.Decision{Allowed: true, Remaining: 3, ResetAfter: 250 * ms}},
			{now: 20 * sec, n: 1, maxWait: time.Second, want: algo.Decision{Allowed: true,
				Remaining: 2, ResetAfter: 500 * ms, Wait: 250 * ms, At: 20*sec + 250*msec}},
			// MaxWait 0 meters: the 2 units fit now, so it is granted at once (documented).
			{now: 20 * sec, n: 2, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
		}},
		{"refund", lb, []step{
			refundStep(0, 3, 0), // nothing to refund on a fresh key
			{now: 0, n: 4, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			refundStep(0, 2, 0),
			{now: 0, n: 2, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			// Never below empty.
			refundStep(500*msec, 100, 0),
			{now: 500 * msec, n: 4, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
		}},
		{"time going backwards creates no permits", lb, []step{
			{now: 40 * sec, n: 4, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			// Treated as 40s, the latest instant seen; RetryAfter and ResetAfter count from
			// the caller's now (a retry 250ms later would still be before 40s).
			{now: 39 * sec, n: 1, want: algo.Decision{RetryAfter: 1250 * ms, ResetAfter: 2 * time.Second}},
			{now: 40*sec + 250*msec, n: 1, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
		}},
		{"rate 1e9", algo.LeakyBucket{Rate: 1e9, Capacity: 1000}, []step{
			{now: 0, n: 1000, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: µs}},
			{now: 0, n: 1, want: algo.Decision{RetryAfter: µs, ResetAfter: µs}},
			{now: 1, n: 1000, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: µs}},
		}},
		{"rate 1e-6 and capacity 2^53", algo.LeakyBucket{Rate: 1e-6, Capacity: 1 << 53}, []step{
			{now: 0, n: 1 << 53, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: algo.Never}},
			// 2^53 - 0.999999999996 rounds to 2^53-1 in float64: room for 1, 4µs early.
			{now: 0, n: 1, want: algo.Decision{RetryAfter: time.Duration(1e12-4) * µs, ResetAfter: algo.Never}},
			// The queue ahead would take far more than MaxMicros to leak out.
			{now: 0, n: 1, maxWait: algo.Forever, want: algo.Decision{RetryAfter: algo.Never, ResetAfter: algo.Never}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runSteps(t, tt.a, tt.steps)
		})
	}
}
