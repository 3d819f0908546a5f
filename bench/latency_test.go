package bench

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	ulule "github.com/ulule/limiter/v3"
	ulredis "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/bench"
)

// BenchmarkRedisLatency: what one call waits, beside BenchmarkRedis's decisions/s (issue
// 39). GCRA over 10k zipf keys, from 1 goroutine and from 64, for the default store (its
// concurrent calls batched), the unbatched store (Batching{Off: true}), redis_rate and
// ulule. Each goroutine times its own calls into a histogram of its own (internal/bench:
// quantiles within 3.2%); the rows report the p50 and p99 of every call of the run.
func BenchmarkRedisLatency(b *testing.B) {
	addr := redisServer(b)
	ks := keysFor(redisKeys)
	gcra := algo.GCRA{Rate: redisRate, Burst: redisBurst}
	for _, g := range []int{1, redisGoroutines} {
		prefix := "g=" + strconv.Itoa(g) + "/"
		for _, batched := range []bool{true, false} {
			name := "ratekit-gcra"
			opts := []distributed.Option{distributed.WithPrefix("bench:")}
			if !batched {
				name += "-unbatched"
				opts = append(opts, distributed.WithBatching(distributed.Batching{Off: true}))
			}
			b.Run(prefix+name, func(b *testing.B) {
				c := redisClient(b, addr)
				s, err := distributed.New(c, opts...)
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { _ = s.Close() })
				l, err := limiter.New(s, gcra)
				if err != nil {
					b.Fatal(err)
				}
				runLatency(b, g, ks, func(ctx context.Context, key string) error {
					_, err := l.Allow(ctx, key)
					return err
				})
			})
		}
		b.Run(prefix+"redis_rate-gcra", func(b *testing.B) {
			l := redis_rate.NewLimiter(redisClient(b, addr))
			lim := redis_rate.Limit{Rate: redisRate, Burst: redisBurst, Period: time.Second}
			runLatency(b, g, ks, func(ctx context.Context, key string) error {
				_, err := l.Allow(ctx, key, lim)
				return err
			})
		})
		b.Run(prefix+"ulule-redis", func(b *testing.B) {
			st, err := ulredis.NewStoreWithOptions(redisClient(b, addr), ulule.StoreOptions{Prefix: "ulule"})
			if err != nil {
				b.Fatal(err)
			}
			l := ulule.New(st, ulule.Rate{Period: time.Second, Limit: redisBurst})
			runLatency(b, g, ks, func(ctx context.Context, key string) error {
				_, err := l.Get(ctx, key)
				return err
			})
		})
	}
}

// runLatency runs call from exactly g goroutines, b.N calls in all over the zipf sequence
// of ks, each goroutine from its own place in it, and reports decisions/s, p50-µs and
// p99-µs. b fails if a call failed, naming the first error.
func runLatency(b *testing.B, g int, ks *keySet, call func(ctx context.Context, key string) error) {
	b.Helper()
	hists := make([]bench.Histogram, g)
	var failed atomic.Int64
	var firstErr atomic.Value
	b.ReportAllocs()
	b.ResetTimer()
	ctx := context.Background()
	split(b.N, g, func(w, i int) {
		key := ks.keys[ks.seq[i&(seqLen-1)]]
		t0 := time.Now()
		err := call(ctx, key)
		hists[w].Record(time.Since(t0))
		if err != nil {
			failed.Add(1)
			firstErr.CompareAndSwap(nil, err)
		}
	})
	b.StopTimer()
	var all bench.Histogram
	for i := range hists {
		all.Merge(&hists[i])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	b.ReportMetric(float64(all.Quantile(0.50))/float64(time.Microsecond), "p50-µs")
	b.ReportMetric(float64(all.Quantile(0.99))/float64(time.Microsecond), "p99-µs")
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d calls failed, the first with: %v", n, b.N, firstErr.Load())
	}
}
