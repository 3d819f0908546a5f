package limiter_test

import (
	"context"
	"math/rand"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/redistest"
)

// TestPenaltyStoresAgree drives a Penalty through limiter.New on the local store and on
// Redis, on one fake clock, and requires the same decision from both at every step: Allow,
// AllowN (some larger than the limit), Peek and Reset, around several rules.
func TestPenaltyStoresAgree(t *testing.T) {
	t.Parallel()
	c := redistest.WithoutExpiry(redistest.Start(t).Client(t)) // fake clocks against real TTLs
	rules := []algo.Algorithm{
		algo.Penalty{Rule: algo.TokenBucket{Rate: 20, Burst: 3}, Block: 300 * time.Millisecond},
		algo.Penalty{Rule: algo.FixedWindow{Limit: 3, Window: 100 * time.Millisecond}, Block: 250 * time.Millisecond,
			Growth: 2, MaxBlock: 2 * time.Second},
		algo.Penalty{Rule: algo.SlidingWindowLog{Limit: 2, Window: 100 * time.Millisecond}, Block: 70 * time.Millisecond,
			Growth: 1.5, MaxBlock: time.Second},
		algo.Penalty{Rule: algo.GCRA{Rate: 1e3 / 7, Burst: 4}, Block: 50 * time.Millisecond, Growth: 3, MaxBlock: 500 * time.Millisecond},
		algo.Named(algo.Penalty{Rule: algo.LeakyBucket{Rate: 30, Capacity: 3}, Block: 333 * time.Millisecond}, "abuse"),
	}
	for _, a := range rules {
		t.Run(a.Name(), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			stores := adminStores(t, clk, c)
			ll := mustNew(t, stores["local"], a)
			rl := mustNew(t, stores["redis"], a)
			r := rand.New(rand.NewSource(4))
			var blocked, allowed int
			for i := 0; i < 600; i++ {
				if r.Intn(3) == 0 {
					clk.Add(time.Duration(r.Int63n(int64(120 * time.Millisecond))))
				}
				key := []string{"a", "b"}[r.Intn(2)]
				var dl, dr limiter.Decision
				var el, er error
				switch x := r.Intn(20); {
				case x == 0:
					el, er = ll.Reset(ctx, key), rl.Reset(ctx, key)
				case x < 5:
					dl, el = ll.Peek(ctx, key)
					dr, er = rl.Peek(ctx, key)
				case x < 7:
					n := 1 + r.Int63n(6)
					dl, el = ll.AllowN(ctx, key, n)
					dr, er = rl.AllowN(ctx, key, n)
				default:
					dl, el = ll.Allow(ctx, key)
					dr, er = rl.Allow(ctx, key)
				}
				if el != nil || er != nil {
					t.Fatalf("step %d: local %v, redis %v", i, el, er)
				}
				if dl != dr {
					t.Fatalf("step %d key %s: local %+v, redis %+v", i, key, dl, dr)
				}
				switch {
				case dl.Allowed:
					allowed++
				case dl.RetryAfter > 40*time.Millisecond && dl.RetryAfter != algo.Never:
					blocked++
				}
			}
			if allowed < 50 || blocked < 20 {
				t.Fatalf("allowed %d, blocked %d: the sequence does not exercise the penalty", allowed, blocked)
			}
		})
	}
}

// TestPenaltyBlocksThroughLimiter shows the penalty through the public API on both stores:
// the denial that exceeds the limit blocks the key for Block, though the rule itself would
// grant again sooner.
func TestPenaltyBlocksThroughLimiter(t *testing.T) {
	t.Parallel()
	c := redistest.WithoutExpiry(redistest.Start(t).Client(t))
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	a := algo.Penalty{Rule: algo.FixedWindow{Limit: 2, Window: time.Second}, Block: time.Minute}
	ctx := context.Background()
	for name, st := range adminStores(t, clk, c) {
		l := mustNew(t, st, a)
		for i, want := range []bool{true, true, false} {
			if d, err := l.Allow(ctx, "k"); err != nil || d.Allowed != want {
				t.Fatalf("%s call %d: %+v %v", name, i, d, err)
			}
		}
		clk.Add(30 * time.Second) // the window is long over; the block is not
		if d, _ := l.Allow(ctx, "k"); d.Allowed || d.RetryAfter != 30*time.Second {
			t.Fatalf("%s: %+v, want blocked for 30 s more", name, d)
		}
		clk.Add(30 * time.Second)
		if d, _ := l.Allow(ctx, "k"); !d.Allowed {
			t.Fatalf("%s: %+v, want the block over", name, d)
		}
		clk.Add(-60 * time.Second) // back for the other store
	}
}
