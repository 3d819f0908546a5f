package leasing_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/leasing"
)

// process is one simulated process: its own Redis client, Redis store and leasing store.
func process(t testing.TB, addr, prefix string, slice int64, opts ...distributed.Option) *leasing.Store {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	ds, err := distributed.New(c, append([]distributed.Option{distributed.WithPrefix(prefix),
		distributed.WithTimeout(10 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	s, err := leasing.New(ds, slice)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestLeasingBoundAcrossProcesses runs 4 processes (each its own client, Redis store and
// leasing store, slice 10) × 8 goroutines hammering one key on a real Redis for about
// 1.6 s at the server's time, and checks what holds however the goroutines are scheduled:
// the store never grants more than the algorithm does (counted at the slices' grants,
// Decision.At), and the token bucket's total stays within burst + rate × elapsed.
func TestLeasingBoundAcrossProcesses(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	const procs, goroutines, slice = 4, 8, 10
	const window = 200 * time.Millisecond
	w := int64(window / time.Microsecond)
	for _, tc := range []struct {
		a       algo.Algorithm
		perWin  int64 // what the algorithm admits in one window, at most
		exactAt bool  // grants counted by their slice's At never exceed perWin
	}{
		{algo.FixedWindow{Limit: 100, Window: window}, 100, true},
		{algo.TokenBucket{Rate: 500, Burst: 50}, 50 + 500*w/1e6, false},
	} {
		t.Run(tc.a.Name(), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			prefix := "lease-" + tc.a.Name() + ":"
			var mu sync.Mutex
			used := map[int64]int64{}    // window of use → admitted
			counted := map[int64]int64{} // window of the grant's At → admitted
			var total int64
			start := time.Now()
			stop := start.Add(8 * window)
			var wg sync.WaitGroup
			for p := 0; p < procs; p++ {
				s := process(t, srv.Addr(), prefix, slice)
				for g := 0; g < goroutines; g++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for time.Now().Before(stop) {
							d, err := s.Apply(ctx, "hot", tc.a, algo.Request{N: 1})
							if err != nil {
								t.Error(err)
								return
							}
							if !d.Allowed {
								continue
							}
							u := time.Now().UnixMicro() / w
							mu.Lock()
							used[u]++
							counted[d.At/w]++
							total++
							mu.Unlock()
						}
					}()
				}
			}
			wg.Wait()
			elapsed := time.Since(start)
			first, last := start.UnixMicro()/w, stop.UnixMicro()/w
			// Only what does not depend on how the goroutines were scheduled is checked here:
			// the store's own count (by the slices' At) and the total. When each permit was
			// used is up to the scheduler; TestLeasingBoundModel checks the bound on use
			// on a fake clock.
			for win := first; win <= last+1; win++ {
				if tc.exactAt && counted[win] > tc.perWin {
					t.Errorf("window %d: the store granted %d, above its limit %d", win-first, counted[win], tc.perWin)
				}
			}
			if tb, ok := tc.a.(algo.TokenBucket); ok {
				if max := tb.Burst + int64(tb.Rate*elapsed.Seconds()) + 1; total > max {
					t.Errorf("admitted %d in %v, above burst + rate × elapsed = %d", total, elapsed, max)
				}
			}
			t.Logf("admitted %d in %v; per window of use: %v", total, elapsed.Round(time.Millisecond), windows(used, first, last))
		})
	}
}

func windows(m map[int64]int64, first, last int64) []int64 {
	var out []int64
	for w := first; w <= last; w++ {
		out = append(out, m[w])
	}
	return out
}

// BenchmarkHotKey runs one hot key on a real Redis from 64 goroutines through one Redis
// store side by side: plain (Batching{Off: true}, a round trip per decision), the default
// store (its concurrent calls batched) and leased (slice 100) over the default store.
func BenchmarkHotKey(b *testing.B) {
	srv := redistest.Start(b)
	var a algo.Algorithm = algo.TokenBucket{Rate: 1e9, Burst: 1e9} // never denies; boxed once
	for _, mode := range []string{"plain", "batched", "leased-100"} {
		b.Run(mode, func(b *testing.B) {
			c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true, PoolSize: 64})
			defer c.Close()
			opts := []distributed.Option{distributed.WithPrefix("bench-" + mode + ":")}
			if mode == "plain" {
				opts = append(opts, distributed.WithBatching(distributed.Batching{Off: true}))
			}
			ds, err := distributed.New(c, opts...)
			if err != nil {
				b.Fatal(err)
			}
			var s interface {
				Apply(context.Context, string, algo.Algorithm, algo.Request) (algo.Decision, error)
			} = ds
			if mode == "leased-100" {
				ls, err := leasing.New(ds, 100)
				if err != nil {
					b.Fatal(err)
				}
				defer ls.Close()
				s = ls
			}
			ctx := context.Background()
			b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0))) // 64 goroutines
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if d, err := s.Apply(ctx, "hot", a, algo.Request{N: 1}); err != nil || !d.Allowed {
						b.Errorf("%+v, %v", d, err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "decisions/s")
		})
	}
}
