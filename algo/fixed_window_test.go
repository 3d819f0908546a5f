package algo_test

import (
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

func TestFixedWindow(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	fw := algo.FixedWindow{Limit: 3, Window: time.Second}
	tests := []struct {
		name  string
		a     algo.Algorithm
		steps []step
	}{
		{"exhaust and the next window", fw, []step{
			{now: 5*sec + 100*msec, n: 1, want: algo.Decision{Allowed: true, Remaining: 2, ResetAfter: 900 * ms}},
			{now: 5*sec + 200*msec, n: 2, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: 800 * ms}},
			// Full: the next window starts at 6s, which is both RetryAfter and ResetAfter.
			{now: 5*sec + 300*msec, n: 1, want: algo.Decision{RetryAfter: 700 * ms, ResetAfter: 700 * ms}},
			{now: 6*sec - 1, n: 1, want: algo.Decision{RetryAfter: time.Microsecond, ResetAfter: time.Microsecond}},
			{now: 6 * sec, n: 1, want: algo.Decision{Allowed: true, Remaining: 2, ResetAfter: time.Second}},
		}},
		{"impossible requests change nothing", fw, []step{
			{now: 0, n: 4, want: algo.Decision{Remaining: 3, RetryAfter: algo.Never}},
			{now: 0, n: 0, want: algo.Decision{Remaining: 3, RetryAfter: algo.Never}},
			{now: 0, n: -1, want: algo.Decision{Remaining: 3, RetryAfter: algo.Never}},
			{now: 0, n: 1, want: algo.Decision{Allowed: true, Remaining: 2, ResetAfter: time.Second}},
			{now: 1, n: 4, want: algo.Decision{Remaining: 2, RetryAfter: algo.Never, ResetAfter: time.Second - time.Microsecond}},
		}},
		{"windows are aligned to the epoch, before it too", algo.FixedWindow{Limit: 2, Window: 7 * time.Microsecond}, []step{
			// -8 is in window -2 = [-14, -7).
			{now: -8, n: 2, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Microsecond}},
			{now: -8, n: 1, want: algo.Decision{RetryAfter: time.Microsecond, ResetAfter: time.Microsecond}},
			{now: -7, n: 2, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: 7 * time.Microsecond}},
			{now: -1, n: 1, want: algo.Decision{RetryAfter: time.Microsecond, ResetAfter: time.Microsecond}},
			{now: 0, n: 1, want: algo.Decision{Allowed: true, Remaining: 1, ResetAfter: 7 * time.Microsecond}},
			{now: 13, n: 2, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Microsecond}},
		}},
		{"a reservation goes to the next window and later requests queue behind it", fw, []step{
			{now: 6 * sec, n: 2, want: algo.Decision{Allowed: true, Remaining: 1, ResetAfter: time.Second}},
			// 2+3 > 3: the next window, 500ms away, is within MaxWait.
			{now: 6*sec + 500*msec, n: 3, maxWait: 500 * ms, want: algo.Decision{Allowed: true,
				Remaining: 0, ResetAfter: 1500 * ms, Wait: 500 * ms, At: 7 * sec}},
			// One permit is left in window 6, but a later request never overtakes: it would
			// go to window 8.
			{now: 6*sec + 600*msec, n: 1, want: algo.Decision{RetryAfter: 1400 * ms, ResetAfter: 1400 * ms}},
			// RetryAfter counts down to the moment the wait fits in MaxWait.
			{now: 6*sec + 600*msec, n: 1, maxWait: 399 * ms, want: algo.Decision{RetryAfter: 1001 * ms, ResetAfter: 1400 * ms}},
			{now: 6*sec + 700*msec, n: 1, maxWait: 2 * time.Second, want: algo.Decision{Allowed: true,
				Remaining: 0, ResetAfter: 2300 * ms, Wait: 1300 * ms, At: 8 * sec}},
			{now: 8 * sec, n: 2, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
		}},
		{"MaxWait is rounded down to whole µs", algo.FixedWindow{Limit: 1, Window: 10 * time.Microsecond}, []step{
			{now: 0, n: 1, want: algo.Decision{Allowed: true, ResetAfter: 10 * time.Microsecond}},
			{now: 1, n: 1, maxWait: 9*time.Microsecond - 1, want: algo.Decision{RetryAfter: time.Microsecond, ResetAfter: 9 * time.Microsecond}},
			{now: 1, n: 1, maxWait: 9 * time.Microsecond, want: algo.Decision{Allowed: true,
				ResetAfter: 19 * time.Microsecond, Wait: 9 * time.Microsecond, At: 10}},
		}},
		{"refund to the current window", fw, []step{
			{now: 0, n: 3, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			refundStep(1, 2, 0),
			{now: 2, n: 2, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second - 2*time.Microsecond}},
			// More than was granted: the count stops at zero, it does not go negative.
			refundStep(3, 10, 0),
			{now: 4, n: 3, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second - 4*time.Microsecond}},
			{now: 4, n: 1, want: algo.Decision{RetryAfter: time.Second - 4*time.Microsecond, ResetAfter: time.Second - 4*time.Microsecond}},
		}},
		{"refund of an expired window restores nothing", fw, []step{
			{now: 0, n: 3, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			{now: sec, n: 3, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			refundStep(sec+1, 3, 0),
			{now: sec + 2, n: 1, want: algo.Decision{RetryAfter: time.Second - 2*time.Microsecond, ResetAfter: time.Second - 2*time.Microsecond}},
		}},
		{"refund of a queued reservation", algo.FixedWindow{Limit: 2, Window: 10 * time.Microsecond}, []step{
			{now: 0, n: 2, want: algo.Decision{Allowed: true, ResetAfter: 10 * time.Microsecond}},
			{now: 1, n: 2, maxWait: time.Second, want: algo.Decision{Allowed: true,
				ResetAfter: 19 * time.Microsecond, Wait: 9 * time.Microsecond, At: 10}},
			refundStep(2, 2, 10),
			// Window 0 is still full, so requests still queue for window 1, and the state
			// is not fresh until window 1 begins (a ResetAfter of 0 here would let a store
			// evict it and grant window 0 again).
			{now: 3, n: 1, want: algo.Decision{RetryAfter: 7 * time.Microsecond, ResetAfter: 7 * time.Microsecond}},
			{now: 10, n: 2, want: algo.Decision{Allowed: true, ResetAfter: 10 * time.Microsecond}},
		}},
		{"time going backwards creates no permits", fw, []step{
			{now: 5*sec + 100*msec, n: 3, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: 900 * ms}},
			// Back in window 4: the state's window 5 is full, so the earliest grant is in
			// window 6.
			{now: 4*sec + 900*msec, n: 1, want: algo.Decision{RetryAfter: 1100 * ms, ResetAfter: 1100 * ms}},
			{now: 5*sec + 50*msec, n: 1, want: algo.Decision{RetryAfter: 950 * ms, ResetAfter: 950 * ms}},
		}},
		{"large limit", algo.FixedWindow{Limit: 1 << 53, Window: time.Second}, []step{
			{now: 0, n: 1<<53 - 1, want: algo.Decision{Allowed: true, Remaining: 1, ResetAfter: time.Second}},
			{now: 1, n: 1, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second - time.Microsecond}},
			{now: 2, n: 1, want: algo.Decision{RetryAfter: time.Second - 2*time.Microsecond, ResetAfter: time.Second - 2*time.Microsecond}},
			{now: 2, n: 1<<53 + 1, want: algo.Decision{RetryAfter: algo.Never, ResetAfter: time.Second - 2*time.Microsecond}},
		}},
		{"a wait of MaxMicros or more is never granted", algo.FixedWindow{Limit: 1, Window: time.Duration(algo.MaxMicros) * time.Microsecond}, []step{
			{now: 0, n: 1, want: algo.Decision{Allowed: true, ResetAfter: algo.Never}},
			{now: 0, n: 1, maxWait: algo.Forever, want: algo.Decision{RetryAfter: algo.Never, ResetAfter: algo.Never}},
			{now: 1, n: 1, maxWait: algo.Forever, want: algo.Decision{Allowed: true,
				ResetAfter: algo.Never, Wait: time.Duration(algo.MaxMicros-1) * time.Microsecond, At: algo.MaxMicros}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runSteps(t, tt.a, tt.steps)
		})
	}
}
