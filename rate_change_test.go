package limiter_test

import (
	"context"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
)

// TestRateChangeNeverOverAdmits: SetAlgorithm with another Rate or Burst in the same slot
// keeps what the key has taken, as x/time/rate's SetLimit and SetBurst keep the tokens,
// and counts the time since the key's last write at the lower of the two rates (a store
// cannot update every key at the change): never more than x/time/rate admits with the
// change made at its instant. On the local store and on Redis, with a fake clock.
func TestRateChangeNeverOverAdmits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		from, to algo.Algorithm
		change   time.Duration // after the drain at t0
		check    time.Duration
		most     int64         // admitted at check, at most (x/time/rate's)
		retry    time.Duration // when most is 0: the RetryAfter of one more, if not 0
	}{
		// The issue: 99 more granted at once, 199 with Burst 100.
		{"gcra slower at once", algo.GCRA{Rate: 100, Burst: 100}, algo.GCRA{Rate: 1, Burst: 100}, 0, 0, 0, 0},
		// The issue: RetryAfter stayed 496 ms; 5 permits at 1 ms are 5 ms, one is due in 1 ms.
		{"gcra faster at once", algo.GCRA{Rate: 10, Burst: 5}, algo.GCRA{Rate: 1000, Burst: 5}, 0, 0, 0, time.Millisecond},
		// 0.5 s at the old 100/s would free 50.
		{"gcra slower later", algo.GCRA{Rate: 100, Burst: 100}, algo.GCRA{Rate: 1, Burst: 100}, 0, 500 * time.Millisecond, 0, 0},
		// A larger Burst does not add permits: x/time keeps its 0 tokens.
		{"gcra larger burst", algo.GCRA{Rate: 1, Burst: 1}, algo.GCRA{Rate: 1, Burst: 10}, 0, 0, 0, 0},
		{"token bucket slower at once", algo.TokenBucket{Rate: 100, Burst: 100}, algo.TokenBucket{Rate: 1, Burst: 100}, 0, 0, 0, 0},
		// x/time: 0.5 s at 1/s, then 0.5 s at 100/s: 50.5 tokens. Counting the whole second
		// at the new rate gave 100.
		{"token bucket faster later", algo.TokenBucket{Rate: 1, Burst: 100}, algo.TokenBucket{Rate: 100, Burst: 100},
			500 * time.Millisecond, time.Second, 50, 0},
		{"leaky bucket faster later", algo.LeakyBucket{Rate: 1, Capacity: 100}, algo.LeakyBucket{Rate: 100, Capacity: 100},
			500 * time.Millisecond, time.Second, 50, 0},
	} {
		for name, mk := range fakeClockStores(t, "rate") {
			t.Run(name+"/"+tc.name, func(t *testing.T) {
				clk := clockx.NewFake(start)
				l, err := limiter.New(mk(clk), tc.from, limiter.WithClock(clk))
				if err != nil {
					t.Fatal(err)
				}
				if d, err := l.AllowN(ctx, "k", limitOf(tc.from)); err != nil || !d.Allowed {
					t.Fatalf("draining: %+v, %v", d, err)
				}
				clk.Add(tc.change)
				if err := l.SetAlgorithm(tc.to); err != nil {
					t.Fatal(err)
				}
				clk.Add(tc.check - tc.change)
				var got int64
				var last limiter.Decision
				for ; got <= limitOf(tc.to); got++ {
					if last, err = l.Allow(ctx, "k"); err != nil {
						t.Fatal(err)
					}
					if !last.Allowed {
						break
					}
				}
				if got > tc.most {
					t.Errorf("%v, then %v at +%v: %d admitted at +%v, x/time/rate admits %d",
						tc.from, tc.to, tc.change, got, tc.check, tc.most)
				}
				if tc.retry != 0 && last.RetryAfter != tc.retry {
					t.Errorf("%v, then %v: RetryAfter %v, want %v", tc.from, tc.to, last.RetryAfter, tc.retry)
				}
			})
		}
	}
}
