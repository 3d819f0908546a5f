package leasing_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/leasing"
	"github.com/ratekit/limiter/local"
)

// TestOverLimitHotKeyCost is issue 21's third case on a fake clock: one key of
// TokenBucket 200/s hammered far over its limit (a request every 100 µs for 1 s). Leasing
// alone made it cost more calls to the inner store than the plain store (a denied slice,
// then every request asked alone); a denied request must be remembered until its
// RetryAfter. The leased store must cost at most a tenth of the plain store's calls and
// admit about as much (at least 90 % of it, and within its bound: burst + rate × elapsed).
func TestOverLimitHotKeyCost(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		for _, c := range []struct {
			a     algo.TokenBucket
			slice int64
		}{
			{algo.TokenBucket{Rate: 200, Burst: 200}, 100},
			{algo.TokenBucket{Rate: 200, Burst: 200}, 10},
			{algo.TokenBucket{Rate: 200, Burst: 50}, 100}, // a slice is never granted
		} {
			t.Run(fmt.Sprintf("%s/burst=%d/slice=%d", b.name, c.a.Burst, c.slice), func(t *testing.T) {
				t.Parallel()
				plain, inner, ls, clk := pair(t, b, c.slice)
				const steps, step = 10_000, 100 * time.Microsecond
				run := func(s adminStore) (granted int64) {
					start := clk.Now()
					for range steps {
						clk.Add(step)
						if grant(t, s, "hot", c.a) {
							granted++
						}
					}
					clk.Set(start) // the other run sees the same instants
					return granted
				}
				// The two runs use separate stores on one clock: plain first, then leased.
				wantN, gotN := run(plain), run(ls)
				wantCalls, gotCalls := plain.calls(), inner.calls()
				t.Logf("plain: %d granted, %d calls; leased: %d granted, %d calls", wantN, wantCalls, gotN, gotCalls)
				if gotCalls*10 > wantCalls {
					t.Errorf("leasing cost %d calls to the inner store, the plain store %d", gotCalls, wantCalls)
				}
				bound := c.a.Burst + int64(c.a.Rate*(steps*step).Seconds())
				if gotN > bound || gotN*10 < wantN*9 {
					t.Errorf("leased: %d granted, plain: %d, bound %d", gotN, wantN, bound)
				}
			})
		}
	}
}

// TestOverLimitHotKeyCostConcurrent hammers the key from 16 goroutines, each moving the
// fake clock by 100 µs per request: the callers that find the remembered denial expired
// wait for one of them to ask again instead of each asking the inner store.
func TestOverLimitHotKeyCostConcurrent(t *testing.T) {
	t.Parallel()
	a := algo.TokenBucket{Rate: 200, Burst: 200}
	_, inner, ls, clk := pair(t, backends()[0], 100)
	const goroutines, each = 16, 2000
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				clk.Add(100 * time.Microsecond)
				d, err := ls.Apply(context.Background(), "hot", a, algo.Request{N: 1})
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					granted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Duration(goroutines*each) * 100 * time.Microsecond
	t.Logf("%d requests over %v: %d granted, %d calls to the inner store", goroutines*each, elapsed, granted.Load(), inner.calls())
	if got := inner.calls(); got*10 > goroutines*each {
		t.Errorf("%d calls to the inner store for %d requests", got, goroutines*each)
	}
	if bound := a.Burst + int64(a.Rate*elapsed.Seconds()); granted.Load() > bound {
		t.Errorf("granted %d, above burst + rate × elapsed = %d", granted.Load(), bound)
	}
}

// BenchmarkOverLimitHotKey hammers one key of TokenBucket 200/s far over its limit on
// the local store, plain and leased (slices of 100), and reports the inner calls per
// request.
func BenchmarkOverLimitHotKey(b *testing.B) {
	a := algo.TokenBucket{Rate: 200, Burst: 200}
	for _, mode := range []string{"plain", "leased-100"} {
		b.Run(mode, func(b *testing.B) {
			ls0, err := local.New() // real time: the benchmark's own pace
			if err != nil {
				b.Fatal(err)
			}
			inner := &spy{Store: ls0}
			var s adminStore = inner
			if mode != "plain" {
				ls, err := leasing.New(inner, 100)
				if err != nil {
					b.Fatal(err)
				}
				s = ls
			}
			defer s.Close()
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.Apply(ctx, "hot", a, algo.Request{N: 1}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(inner.calls())/float64(b.N), "inner-calls/op")
		})
	}
}
