package algo_test

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

// TestQuotaLimitIsDecisionLimit: every algorithm's Quota states the Limit of its decisions,
// whatever the state, including the smooth ones at a +Inf rate.
func TestQuotaLimitIsDecisionLimit(t *testing.T) {
	t.Parallel()
	algs := append(everyAlgorithm(),
		algo.SmoothBursty{Rate: math.Inf(1), MaxBurstSeconds: 4},
		algo.SmoothWarmingUp{Rate: math.Inf(1), Warmup: time.Second},
		algo.SmoothWarmingUp{Rate: 5, Warmup: 0},
		algo.TokenBucket{Rate: 1e-12, Burst: 1 << 53},
	)
	for _, a := range algs {
		q, ok := algo.QuotaOf(a)
		if !ok {
			t.Fatalf("%v: no Quota", a)
		}
		st := a.NewState()
		for i, now := range []int64{today, today, today + sec, today + 100*sec} {
			d := a.Apply(st, now, algo.Request{N: 1, MaxWait: time.Second})
			if d.Limit != q.Limit {
				t.Fatalf("%v step %d: Decision.Limit = %d, Quota().Limit = %d", a, i, d.Limit, q.Limit)
			}
		}
	}
}

func TestQuotaWindow(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		a    algo.Algorithm
		want algo.Quota
	}{
		{algo.FixedWindow{Limit: 7, Window: 3 * time.Millisecond}, algo.Quota{Limit: 7, Window: 3 * time.Millisecond}},
		{algo.SlidingWindowLog{Limit: 5, Window: time.Hour}, algo.Quota{Limit: 5, Window: time.Hour}},
		{algo.SlidingWindowCounter{Limit: 9, Window: time.Minute}, algo.Quota{Limit: 9, Window: time.Minute}},
		{algo.TokenBucket{Rate: 10, Burst: 20}, algo.Quota{Limit: 20, Window: 2 * time.Second}},
		{algo.TokenBucket{Rate: 3, Burst: 10}, algo.Quota{Limit: 10, Window: 3333333334}}, // rounded up
		{algo.TokenBucket{Rate: 1e-12, Burst: 1 << 53}, algo.Quota{Limit: 1 << 53, Window: algo.Never}},
		{algo.LeakyBucket{Rate: 2, Capacity: 5}, algo.Quota{Limit: 5, Window: 2500 * time.Millisecond}},
		{algo.GCRA{Rate: 0.5, Burst: 3}, algo.Quota{Limit: 3, Window: 6 * time.Second}},
		{algo.SmoothBursty{Rate: 5}, algo.Quota{Limit: 5, Window: time.Second}},
		{algo.SmoothBursty{Rate: 4, MaxBurstSeconds: 2.5}, algo.Quota{Limit: 10, Window: 2500 * time.Millisecond}},
		{algo.SmoothWarmingUp{Rate: 5, Warmup: time.Second}, algo.Quota{Limit: 5}},
		{algo.Named(algo.GCRA{Rate: 0.5, Burst: 3}, "slow"), algo.Quota{Limit: 3, Window: 6 * time.Second}},
		{algo.Named(algo.Named(algo.FixedWindow{Limit: 1, Window: time.Second}, "a"), "b"), algo.Quota{Limit: 1, Window: time.Second}},
	} {
		got, ok := algo.QuotaOf(c.a)
		if !ok || got != c.want {
			t.Errorf("QuotaOf(%v) = %+v, %v; want %+v, true", c.a, got, ok, c.want)
		}
	}
}

// TestQuotaOfWithout: an algorithm that states no quota, and a Named one wrapping nothing.
func TestQuotaOfWithout(t *testing.T) {
	t.Parallel()
	for _, a := range []algo.Algorithm{nil, noScript{}, algo.Named(nil, "x"), algo.Named(noScript{}, "x")} {
		if q, ok := algo.QuotaOf(a); ok {
			t.Errorf("QuotaOf(%v) = %+v, true; want false", a, q)
		}
	}
}

// ExampleQuotaOf describes rules the way the RateLimit-Policy header does: a limit and the
// span over which it is earned back.
func ExampleQuotaOf() {
	for _, a := range []algo.Algorithm{
		algo.FixedWindow{Limit: 100, Window: time.Minute},
		algo.TokenBucket{Rate: 10, Burst: 20},
		algo.Named(algo.GCRA{Rate: 0.5, Burst: 3}, "slow"),
		algo.SmoothWarmingUp{Rate: 5, Warmup: time.Second},
	} {
		q, _ := algo.QuotaOf(a)
		if q.Window == 0 {
			fmt.Printf("%s: %d at once, no fixed window\n", a.Name(), q.Limit)
			continue
		}
		fmt.Printf("%s: %d per %v\n", a.Name(), q.Limit, q.Window)
	}
	// Output:
	// fixed-window: 100 per 1m0s
	// token-bucket: 20 per 2s
	// gcra: 3 per 6s
	// smooth-warmup: 5 at once, no fixed window
}
