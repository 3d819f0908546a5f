package algo_test

import (
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

// bucketSteps is a table that a TokenBucket and a GCRA of Rate 4 and Burst 4 answer alike:
// one permit every 250ms, up to 4 at once. The instants are multiples of 1/16 s so that
// every number is exact in float64.
func bucketSteps() []step {
	ms := time.Millisecond
	return []step{
		{now: 0, n: 4, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
		{now: 0, n: 1, want: algo.Decision{RetryAfter: 250 * ms, ResetAfter: time.Second}},
		{now: 250 * msec, n: 1, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
		// Half a token: a reservation waits for the other half.
		{now: 375 * msec, n: 1, maxWait: 125 * ms, want: algo.Decision{Allowed: true,
			Remaining: 0, ResetAfter: 1125 * ms, Wait: 125 * ms, At: 500 * msec}},
		// The reservation went into debt: later requests wait behind it.
		{now: 375 * msec, n: 1, want: algo.Decision{RetryAfter: 375 * ms, ResetAfter: 1125 * ms}},
		{now: 375 * msec, n: 1, maxWait: 250 * ms, want: algo.Decision{RetryAfter: 125 * ms, ResetAfter: 1125 * ms}},
		{now: 437500, n: 1, maxWait: time.Second, want: algo.Decision{Allowed: true,
			Remaining: 0, ResetAfter: 1312500 * time.Microsecond, Wait: 312500 * time.Microsecond, At: 750 * msec}},
		// Cancelling the last reservation gives its token back.
		refundStep(500*msec, 1, 750*msec),
		{now: 500 * msec, n: 1, want: algo.Decision{RetryAfter: 250 * ms, ResetAfter: time.Second}},
		{now: 750 * msec, n: 1, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
		// Idle for long: full again, never more than Burst.
		{now: 60 * sec, n: 1, want: algo.Decision{Allowed: true, Remaining: 3, ResetAfter: 250 * ms}},
		{now: 60 * sec, n: 5, want: algo.Decision{Remaining: 3, RetryAfter: algo.Never, ResetAfter: 250 * ms}},
		{now: 60 * sec, n: 0, want: algo.Decision{Remaining: 3, RetryAfter: algo.Never, ResetAfter: 250 * ms}},
		{now: 60 * sec, n: -3, want: algo.Decision{Remaining: 3, RetryAfter: algo.Never, ResetAfter: 250 * ms}},
		{now: 60 * sec, n: 3, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
	}
}

func TestTokenBucket(t *testing.T) {
	t.Parallel()
	ms, µs := time.Millisecond, time.Microsecond
	tb := algo.TokenBucket{Rate: 4, Burst: 4}
	tests := []struct {
		name  string
		a     algo.Algorithm
		steps []step
	}{
		{"exhaust, refill, reserve, refund", tb, bucketSteps()},
		{"a fresh key is full", tb, []step{
			{now: -5 * sec, n: 1, want: algo.Decision{Allowed: true, Remaining: 3, ResetAfter: 250 * ms}},
		}},
		{"refund never fills beyond Burst", tb, []step{
			refundStep(0, 3, 0), // nothing to refund on a fresh key
			{now: 0, n: 1, want: algo.Decision{Allowed: true, Remaining: 3, ResetAfter: 250 * ms}},
			refundStep(0, 5, 0),
			{now: 0, n: 4, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			{now: 0, n: 1, want: algo.Decision{RetryAfter: 250 * ms, ResetAfter: time.Second}},
		}},
		{"time going backwards creates no permits", tb, []step{
			{now: 20 * sec, n: 4, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: time.Second}},
			// Treated as 20s, the latest instant seen, but RetryAfter, Wait and ResetAfter
			// count from the caller's now: a retry or a sleep of 250ms would still be before
			// 20s, and a store never expires the key early.
			{now: 19 * sec, n: 1, want: algo.Decision{RetryAfter: 1250 * ms, ResetAfter: 2 * time.Second}},
			{now: 19 * sec, n: 1, maxWait: 250 * ms, want: algo.Decision{RetryAfter: time.Second, ResetAfter: 2 * time.Second}},
			{now: 19 * sec, n: 1, maxWait: 1250 * ms, want: algo.Decision{Allowed: true,
				Remaining: 0, ResetAfter: 2250 * ms, Wait: 1250 * ms, At: 20*sec + 250*msec}},
			{now: 20*sec + 250*msec, n: 1, want: algo.Decision{RetryAfter: 250 * ms, ResetAfter: time.Second}},
		}},
		{"rate 1e9", algo.TokenBucket{Rate: 1e9, Burst: 1000}, []step{
			{now: 0, n: 1000, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: µs}},
			{now: 0, n: 1, want: algo.Decision{RetryAfter: µs, ResetAfter: µs}},
			{now: 1, n: 1000, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: µs}},
		}},
		{"rate 1e-6 and waits of MaxMicros", algo.TokenBucket{Rate: 1e-6, Burst: 1000}, []step{
			// Refilling 1000 tokens takes 1e15 µs = MaxMicros: reported as Never.
			{now: 0, n: 1000, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: algo.Never}},
			{now: 0, n: 1, want: algo.Decision{RetryAfter: time.Duration(1e12) * µs, ResetAfter: algo.Never}},
			{now: 0, n: 999, maxWait: algo.Forever, want: algo.Decision{Allowed: true, Remaining: 0,
				ResetAfter: algo.Never, Wait: time.Duration(999e12) * µs, At: 999e12}},
			// One more would wait MaxMicros or more: never granted, even with Forever.
			{now: 0, n: 1, maxWait: algo.Forever, want: algo.Decision{RetryAfter: algo.Never, ResetAfter: algo.Never}},
		}},
		{"burst 2^53", algo.TokenBucket{Rate: 1, Burst: 1 << 53}, []step{
			// 2^53-1 tokens + 0.999996 rounds to 2^53 in float64: full, so fresh, 4µs early.
			{now: 0, n: 1, want: algo.Decision{Allowed: true, Remaining: 1<<53 - 1, ResetAfter: time.Second - 4*time.Microsecond}},
			{now: 0, n: 1<<53 - 1, want: algo.Decision{Allowed: true, Remaining: 0, ResetAfter: algo.Never}},
			{now: 0, n: 1, want: algo.Decision{RetryAfter: time.Second, ResetAfter: algo.Never}},
			{now: 0, n: 1<<53 + 1, want: algo.Decision{RetryAfter: algo.Never, ResetAfter: algo.Never}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			runSteps(t, tt.a, tt.steps)
		})
	}
}
