package algo_test

import (
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

func TestSlidingWindowLog(t *testing.T) {
	t.Parallel()
	ms, µs := time.Millisecond, time.Microsecond
	sl := algo.SlidingWindowLog{Limit: 3, Window: time.Second}
	tiny := algo.SlidingWindowLog{Limit: 1, Window: 10 * time.Microsecond}
	tests := []struct {
		name  string
		a     algo.Algorithm
		steps []step
	}{
		{"exhaust, then each grant frees its permits a window later", sl, []step{
			{now: 0, n: 1, want: algo.Decision{Allowed: true, Remaining: 2, ResetAfter: time.Second}},
			{now: 400 * msec, n: 2, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			// The grant at 0 leaves the window (t-1s, t] at t = 1s.
			{now: 500 * msec, n: 1, want: algo.Decision{RetryAfter: 500 * ms, ResetAfter: 900 * ms}},
			{now: sec - 1, n: 1, want: algo.Decision{RetryAfter: µs, ResetAfter: 400*ms + µs}},
			{now: sec, n: 1, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			// Two permits: the grant at 400ms must leave too.
			{now: sec, n: 2, want: algo.Decision{RetryAfter: 400 * ms, ResetAfter: time.Second}},
			{now: 1400 * msec, n: 2, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
		}},
		{"impossible requests change nothing", sl, []step{
			{now: 0, n: 4, want: algo.Decision{Remaining: 3, RetryAfter: algo.Never}},
			{now: 0, n: 0, want: algo.Decision{Remaining: 3, RetryAfter: algo.Never}},
			{now: 0, n: 3, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			{now: 1, n: -5, want: algo.Decision{Remaining: 0, RetryAfter: algo.Never, ResetAfter: time.Second - µs}},
		}},
		{"reservations queue in order", sl, []step{
			{now: 0, n: 1, want: algo.Decision{Allowed: true, Remaining: 2, ResetAfter: time.Second}},
			{now: 400 * msec, n: 2, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			{now: 500 * msec, n: 1, maxWait: 499 * ms, want: algo.Decision{RetryAfter: ms, ResetAfter: 900 * ms}},
			{now: 500 * msec, n: 1, maxWait: 500 * ms, want: algo.Decision{Allowed: true,
				Remaining: 0, ResetAfter: 1500 * ms, Wait: 500 * ms, At: sec}},
			// (0.6s-1s, 1s] would hold 4 with one more: the grants at 0 and 0.4s must leave
			// first, so the earliest grant is at 1.4s (not before the reservation at 1s).
			{now: 600 * msec, n: 1, want: algo.Decision{RetryAfter: 800 * ms, ResetAfter: 1400 * ms}},
			{now: 600 * msec, n: 1, maxWait: 2 * time.Second, want: algo.Decision{Allowed: true,
				Remaining: 0, ResetAfter: 1800 * ms, Wait: 800 * ms, At: 1400 * msec}},
			// Grants at the same instant share one entry.
			{now: 700 * msec, n: 1, maxWait: 2 * time.Second, want: algo.Decision{Allowed: true,
				Remaining: 0, ResetAfter: 1700 * ms, Wait: 700 * ms, At: 1400 * msec}},
			refundStep(800*msec, 1, 1400*msec),
			{now: 2 * sec, n: 2, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			{now: 2 * sec, n: 1, want: algo.Decision{RetryAfter: 400 * ms, ResetAfter: time.Second}},
		}},
		{"instants before the epoch", tiny, []step{
			{now: -25, n: 1, want: algo.Decision{Allowed: true, ResetAfter: 10 * µs}},
			{now: -16, n: 1, want: algo.Decision{RetryAfter: µs, ResetAfter: µs}},
			{now: -15, n: 1, want: algo.Decision{Allowed: true, ResetAfter: 10 * µs}},
		}},
		{"refund", sl, []step{
			{now: 0, n: 3, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			refundStep(10, 2, 0),
			{now: 20, n: 2, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			// A refund names the grant by its At; an unknown At restores nothing.
			refundStep(30, 3, 5),
			{now: 40, n: 1, want: algo.Decision{RetryAfter: time.Second - 40*µs, ResetAfter: time.Second - 20*µs}},
			refundStep(50, 3, 20),
			{now: 60, n: 2, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
		}},
		{"refund of a queued reservation", tiny, []step{
			{now: 0, n: 1, want: algo.Decision{Allowed: true, ResetAfter: 10 * µs}},
			{now: 1, n: 1, maxWait: time.Second, want: algo.Decision{Allowed: true, ResetAfter: 19 * µs, Wait: 9 * µs, At: 10}},
			// The emptied entry stays, as the floor of later grants: they still queue for
			// 10, when the grant at 0 leaves anyway.
			refundStep(2, 1, 10),
			{now: 3, n: 1, want: algo.Decision{RetryAfter: 7 * µs, ResetAfter: 17 * µs}},
			{now: 10, n: 1, want: algo.Decision{Allowed: true, ResetAfter: 10 * µs}},
		}},
		{"remaining is 0 while a reservation is queued", sl, []step{
			{now: 0, n: 3, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			{now: 1, n: 2, maxWait: 2 * time.Second, want: algo.Decision{Allowed: true,
				Remaining: 0, ResetAfter: 2*time.Second - µs, Wait: time.Second - µs, At: sec}},
			refundStep(2, 3, 0),
			// Only 2 permits are logged, but a request now would queue behind the one at 1s.
			{now: 3, n: 1, want: algo.Decision{RetryAfter: time.Second - 3*µs, ResetAfter: 2*time.Second - 3*µs}},
		}},
		{"time going backwards creates no permits", tiny, []step{
			{now: 0, n: 1, want: algo.Decision{Allowed: true, ResetAfter: 10 * µs}},
			// A denial at 15 must not forget the grant at 0...
			{now: 15, n: 2, want: algo.Decision{Remaining: 1, RetryAfter: algo.Never}},
			// ...which still fills (-5, 5].
			{now: 5, n: 1, want: algo.Decision{RetryAfter: 5 * µs, ResetAfter: 5 * µs}},
			{now: 15, n: 1, want: algo.Decision{Allowed: true, ResetAfter: 10 * µs}},
			// A refund of the newest grant keeps its instant as the floor of later grants.
			refundStep(15, 1, 15),
			{now: 5, n: 1, want: algo.Decision{RetryAfter: 10 * µs, ResetAfter: 20 * µs}},
			{now: 15, n: 1, want: algo.Decision{Allowed: true, ResetAfter: 10 * µs}},
		}},
		{"a refund while the clock is back keeps the floor", tiny, []step{
			{now: 0, n: 1, want: algo.Decision{Allowed: true, ResetAfter: 10 * µs}},
			// This grant forgets the one at 0...
			{now: 15, n: 1, want: algo.Decision{Allowed: true, ResetAfter: 10 * µs}},
			// ...so, refunded at 6, its entry must still hold later grants at 15 or after:
			// a grant at 7 would share (-3, 7] with the one at 0.
			refundStep(6, 1, 15),
			{now: 7, n: 1, want: algo.Decision{RetryAfter: 8 * µs, ResetAfter: 18 * µs}},
		}},
		{"large limit", algo.SlidingWindowLog{Limit: 1 << 53, Window: time.Second}, []step{
			{now: 0, n: 1 << 53, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			{now: 1, n: 1, want: algo.Decision{RetryAfter: time.Second - µs, ResetAfter: time.Second - µs}},
			{now: sec, n: 1, want: algo.Decision{Allowed: true, Remaining: 1<<53 - 1, ResetAfter: time.Second}},
		}},
		{"a wait of MaxMicros or more is never granted", algo.SlidingWindowLog{Limit: 1, Window: time.Duration(algo.MaxMicros) * µs}, []step{
			{now: 0, n: 1, want: algo.Decision{Allowed: true, ResetAfter: algo.Never}},
			{now: 0, n: 1, maxWait: algo.Forever, want: algo.Decision{RetryAfter: algo.Never, ResetAfter: algo.Never}},
			{now: 1, n: 1, maxWait: algo.Forever, want: algo.Decision{Allowed: true,
				ResetAfter: algo.Never, Wait: time.Duration(algo.MaxMicros-1) * µs, At: algo.MaxMicros}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runSteps(t, tt.a, tt.steps)
		})
	}
}
