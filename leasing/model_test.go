package leasing_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/leasing"
	"github.com/ratekit/limiter/local"
)

// shared is the one store several simulated processes lease from; a process's Close
// returns its leases but leaves the shared store open for the others.
type shared struct{ *local.Store }

func (shared) Close() error { return nil }

// TestLeasingBoundModel runs random histories of processes leasing slices of one key
// from a shared store on a fake clock (requests from random processes, the clock moving
// by random steps, now and then a long idle, cold keys evicting the hot key's leases from
// tables of 1 to 3 leases), and checks the documented bounds on the
// permits used, by the instant each was granted to the caller:
//   - fixed window: no window uses more than Limit (a lease never outlives its window);
//   - sliding log: no span of one Window uses more than Limit + processes × slice;
//   - token bucket, GCRA, leaky bucket: no span [t1, t2] uses more than
//     Burst + Rate × (t2 − t1) + processes × slice.
func TestLeasingBoundModel(t *testing.T) {
	t.Parallel()
	const procs, slice = 4, 10
	const window = 200 * time.Millisecond
	rules := []algo.Algorithm{
		algo.FixedWindow{Limit: 100, Window: window},
		algo.SlidingWindowLog{Limit: 100, Window: window},
		algo.TokenBucket{Rate: 500, Burst: 50},
		algo.GCRA{Rate: 500, Burst: 50},
		algo.LeakyBucket{Rate: 500, Capacity: 50},
	}
	for _, a := range rules {
		for seed := uint64(1); seed <= 8; seed++ {
			t.Run(fmt.Sprintf("%s/seed=%d", a.Name(), seed), func(t *testing.T) {
				t.Parallel()
				used := leaseHistory(t, a, procs, slice, seed)
				if len(used) < 100 {
					t.Fatalf("only %d grants: the history does not exercise the limit", len(used))
				}
				checkLeaseBound(t, a, used, procs*slice)
			})
		}
	}
}

// leaseHistory runs one random history and returns the instants (µs) of every grant.
func leaseHistory(t *testing.T, a algo.Algorithm, procs int, slice int64, seed uint64) []int64 {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 0x1ea5e))
	clk := clockx.NewFake(epoch)
	ls, err := local.New(local.WithClock(clk), local.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ls.Close() })
	ps := make([]*leasing.Store, procs)
	for i := range ps {
		// A table of 1 to 3 leases, which the cold keys below keep evicting the hot key from.
		if ps[i], err = leasing.New(shared{ls}, slice, leasing.WithTTL(time.Duration(1+rng.IntN(300))*time.Millisecond),
			leasing.WithMaxKeys(1+rng.IntN(3))); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ps[i].Close() })
	}
	ctx := context.Background()
	var used []int64
	for range 6000 {
		switch r := rng.IntN(100); {
		case r < 1:
			clk.Add(time.Duration(rng.IntN(2000)) * time.Millisecond) // idle
		case r < 40:
			clk.Add(time.Duration(rng.IntN(3000)) * time.Microsecond)
		}
		key := "hot"
		if rng.IntN(8) == 0 {
			key = fmt.Sprintf("cold-%d", rng.IntN(16))
		}
		d, err := ps[rng.IntN(procs)].Apply(ctx, key, a, algo.Request{N: 1})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed && key == "hot" {
			used = append(used, clk.Now().UnixMicro())
		}
	}
	return used
}

// checkLeaseBound checks the grants (instants in µs, in order) against a's bound with
// slack extra permits.
func checkLeaseBound(t *testing.T, a algo.Algorithm, used []int64, slack int64) {
	t.Helper()
	switch c := a.(type) {
	case algo.FixedWindow:
		w := int64(c.Window / time.Microsecond)
		per := map[int64]int64{}
		for _, at := range used {
			if per[at/w]++; per[at/w] > c.Limit {
				t.Fatalf("window %d used %d, above Limit %d", at/w, per[at/w], c.Limit)
			}
		}
	case algo.SlidingWindowLog:
		w := int64(c.Window / time.Microsecond)
		lo := 0
		for hi, at := range used {
			for used[lo] <= at-w {
				lo++
			}
			if n := int64(hi - lo + 1); n > c.Limit+slack {
				t.Fatalf("%d used in the window ending at %d µs, above Limit %d + %d", n, at, c.Limit, slack)
			}
		}
	default:
		var rate float64
		var burst int64
		switch c := a.(type) {
		case algo.TokenBucket:
			rate, burst = c.Rate, c.Burst
		case algo.GCRA:
			rate, burst = c.Rate, c.Burst
		case algo.LeakyBucket:
			rate, burst = c.Rate, c.Capacity
		}
		// Grants i..j (inclusive) number j−i+1 and span used[j]−used[i]: the bound is
		// j−i+1 ≤ burst + slack + rate·(used[j]−used[i]), that is f(j) − f(i) ≤ burst+slack−1
		// with f(k) = k − rate·used[k]; keep the least f(i) seen so far.
		f := func(k int) float64 { return float64(k) - rate*float64(used[k])/1e6 }
		minF := f(0)
		for j := range used {
			minF = min(minF, f(j))
			if f(j)-minF > float64(burst+slack-1)+1e-6 {
				t.Fatalf("grant %d at %d µs: %.2f permits above burst %d + rate × span + %d", j, used[j], f(j)-minF-float64(burst+slack-1), burst, slack)
			}
		}
	}
}
