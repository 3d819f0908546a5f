package algo_test

import (
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

func TestSlidingWindowCounter(t *testing.T) {
	t.Parallel()
	ms, µs := time.Millisecond, time.Microsecond
	sc := algo.SlidingWindowCounter{Limit: 10, Window: time.Second}
	small := algo.SlidingWindowCounter{Limit: 2, Window: 10 * time.Microsecond}
	tests := []struct {
		name  string
		a     algo.Algorithm
		steps []step
	}{
		{"the previous window weighs by its overlap", sc, []step{
			// Counts last until the end of the next window: ResetAfter 2s - 0.5s.
			{now: 500 * msec, n: 4, want: algo.Decision{Allowed: true, Remaining: 6, ResetAfter: 1500 * ms}},
			// At 1.25s the previous 4 weigh 4·0.75 = 3: 8 more fit once they weigh 2, at 1.5s.
			{now: 1250 * msec, n: 8, want: algo.Decision{Remaining: 7, RetryAfter: 250 * ms, ResetAfter: 750 * ms}},
			{now: 1500*msec - 1, n: 8, want: algo.Decision{Remaining: 7, RetryAfter: µs, ResetAfter: 500*ms + µs}},
			{now: 1500 * msec, n: 8, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: 1500 * ms}},
			// 8 + 4·(1-t) + 1 ≤ 10 from t = 0.75.
			{now: 1600 * msec, n: 1, want: algo.Decision{Remaining: 0, RetryAfter: 150 * ms, ResetAfter: 1400 * ms}},
			{now: 1750 * msec, n: 1, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: 1250 * ms}},
			{now: 2 * sec, n: 1, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: 2 * time.Second}},
		}},
		{"the weighted count is rounded up in Remaining", sc, []step{
			{now: -500 * msec, n: 10, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: 1500 * ms}},
			// 10·(1-0.1) + 1 = 10 at 0.1s; at 0.25s the previous window weighs 7.5 → 8.
			{now: 250 * msec, n: 1, want: algo.Decision{Allowed: true, Remaining: 1, ResetAfter: 1750 * ms}},
		}},
		{"impossible requests change nothing", sc, []step{
			{now: 0, n: 11, want: algo.Decision{Remaining: 10, RetryAfter: algo.Never}},
			{now: 0, n: 0, want: algo.Decision{Remaining: 10, RetryAfter: algo.Never}},
			{now: 0, n: 10, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: 2 * time.Second}},
			{now: 1, n: -1, want: algo.Decision{Remaining: 0, RetryAfter: algo.Never, ResetAfter: 2*time.Second - µs}},
		}},
		{"reservations go to the next windows and queue in order", sc, []step{
			{now: 1000 * msec, n: 4, want: algo.Decision{Allowed: true, Remaining: 6, ResetAfter: 2 * time.Second}},
			{now: 1500 * msec, n: 4, want: algo.Decision{Allowed: true, Remaining: 2, ResetAfter: 1500 * ms}},
			// 8+3 > 10 in window 1; in window 2 the previous 8 must weigh ≤ 7: 2s + 1/8 s.
			{now: 1600 * msec, n: 3, maxWait: time.Second, want: algo.Decision{Allowed: true,
				Remaining: 0, ResetAfter: 2400 * ms, Wait: 525 * ms, At: 2125 * msec}},
			// One would fit in window 1, but it may not overtake: in window 2 it needs
			// 8·(1-t) ≤ 6, t = 0.25.
			{now: 1700 * msec, n: 1, want: algo.Decision{Remaining: 0, RetryAfter: 550 * ms, ResetAfter: 2300 * ms}},
			{now: 1700 * msec, n: 1, maxWait: 549 * ms, want: algo.Decision{Remaining: 0, RetryAfter: ms, ResetAfter: 2300 * ms}},
			// 10 fit neither in window 2 (3+10 > 10) nor in window 3 (its previous 3 weigh
			// until its end): window 4.
			{now: 1700 * msec, n: 10, maxWait: 5 * time.Second, want: algo.Decision{Allowed: true,
				Remaining: 0, ResetAfter: 4300 * ms, Wait: 2300 * ms, At: 4 * sec}},
			// Window 4 holds 10: in window 5 they weigh ≤ 9 from 5.1s.
			{now: 4 * sec, n: 1, want: algo.Decision{Remaining: 0, RetryAfter: 1100 * ms, ResetAfter: 2 * time.Second}},
		}},
		{"windows are aligned to the epoch, before it too", small, []step{
			// -8 is in window -1 = [-10, 0).
			{now: -8, n: 2, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: 18 * µs}},
			{now: -1, n: 1, want: algo.Decision{RetryAfter: 6 * µs, ResetAfter: 11 * µs}},
			// 2·(1 - 5/10) + 1 = 2 at 5.
			{now: 5, n: 1, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: 15 * µs}},
		}},
		{"refund", small, []step{
			{now: 0, n: 2, want: algo.Decision{Allowed: true, ResetAfter: 20 * µs}},
			refundStep(1, 1, 0),
			{now: 2, n: 1, want: algo.Decision{Allowed: true, ResetAfter: 18 * µs}},
			// A refund into the previous window lowers its weight.
			{now: 12, n: 1, want: algo.Decision{RetryAfter: 3 * µs, ResetAfter: 8 * µs}},
			refundStep(12, 1, 0),
			{now: 12, n: 1, want: algo.Decision{Allowed: true, ResetAfter: 18 * µs}},
			// A window that no longer counts is not restored.
			refundStep(25, 5, 0),
			{now: 25, n: 2, want: algo.Decision{Remaining: 1, RetryAfter: 5 * µs, ResetAfter: 5 * µs}},
		}},
		{"refund of a queued reservation", small, []step{
			{now: 0, n: 2, want: algo.Decision{Allowed: true, ResetAfter: 20 * µs}},
			// Window 1 would need the previous 2 to weigh 0: window 2.
			{now: 1, n: 2, maxWait: time.Second, want: algo.Decision{Allowed: true,
				ResetAfter: 39 * µs, Wait: 19 * µs, At: 20}},
			refundStep(2, 2, 20),
			// Window 0 is still full, so requests still queue for window 2, and the state is
			// not fresh until it begins (a ResetAfter of 0 would let a store evict it).
			{now: 3, n: 1, want: algo.Decision{RetryAfter: 17 * µs, ResetAfter: 17 * µs}},
			{now: 20, n: 2, want: algo.Decision{Allowed: true, ResetAfter: 20 * µs}},
		}},
		{"time going backwards creates no permits", sc, []step{
			{now: 5 * sec, n: 10, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: 2 * time.Second}},
			// Back in window 4: the state stays in window 5, which is full; the earliest
			// grant is at 6s + 0.1s, when 10·(1-t) + 1 ≤ 10.
			{now: 4500 * msec, n: 1, want: algo.Decision{Remaining: 0, RetryAfter: 1600 * ms, ResetAfter: 2500 * ms}},
		}},
		{"large limit", algo.SlidingWindowCounter{Limit: 1 << 53, Window: time.Second}, []step{
			{now: 0, n: 1 << 52, want: algo.Decision{Allowed: true, Remaining: 1 << 52, ResetAfter: 2 * time.Second}},
			// Half a window later the 2^52 weigh 2^51: the count is not clamped to MaxMicros.
			{now: 1500 * msec, n: 1, want: algo.Decision{Allowed: true, Remaining: 1<<53 - 1<<51 - 1, ResetAfter: 1500 * ms}},
		}},
		{"windows longer than MaxMicros", algo.SlidingWindowCounter{Limit: 10, Window: time.Duration(4*algo.MaxMicros) * µs}, []step{
			{now: 0, n: 10, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: algo.Never}},
			// The previous 10 weigh ≤ 7 from 4·MaxMicros + 0.3·Window = 5.2·MaxMicros (+1µs
			// of float64 rounding): the span is not clamped to MaxMicros.
			{now: 5_100_000_000_000_000, n: 3, want: algo.Decision{Remaining: 2,
				RetryAfter: time.Duration(100_000_000_000_001) * µs, ResetAfter: algo.Never}},
			{now: 5_200_000_000_000_001, n: 3, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: algo.Never}},
			// A whole window away: a wait beyond MaxMicros is never granted.
			{now: 5_200_000_000_000_001, n: 8, maxWait: algo.Forever, want: algo.Decision{Remaining: 0,
				RetryAfter: algo.Never, ResetAfter: algo.Never}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runSteps(t, tt.a, tt.steps)
		})
	}
}
