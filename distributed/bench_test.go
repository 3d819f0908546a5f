package distributed_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/benchtest"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
)

// benchAddrEnv names a Redis the benchmark uses instead of starting its own, so that
// testdata/bench-evalsha.sh can compare it with redis-benchmark on the same server.
const benchAddrEnv = "LIMITER_BENCH_REDIS_ADDR"

const (
	benchGoroutines = 64
	benchKeys       = 10_000
)

// BenchmarkApply measures decisions per second through one client with 64 goroutines
// (b.SetParallelism scales them to GOMAXPROCS) spread over 10,000 keys, at the server's
// time: the figure to compare with redis-benchmark running the same EVALSHA with 64
// clients (see testdata/bench-evalsha.sh). Each algorithm runs unbatched
// (Batching{Off: true}: one round trip per call) and batched (the default store:
// concurrent calls share pipelines).
func BenchmarkApply(b *testing.B) {
	addr := os.Getenv(benchAddrEnv)
	if addr == "" {
		addr = redistest.Start(b).Addr()
	}
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: benchGoroutines, ContextTimeoutEnabled: true})
	b.Cleanup(func() { _ = c.Close() })
	keys := make([]string, benchKeys)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	for _, a := range []algo.Algorithm{
		algo.TokenBucket{Rate: 100, Burst: 100},
		algo.GCRA{Rate: 100, Burst: 100},
		algo.SlidingWindowLog{Limit: 100, Window: time.Second},
	} {
		b.Run(a.Name(), func(b *testing.B) {
			benchApply(b, teststore.Redis(b, c, distributed.WithPrefix("bench:"), distributed.WithBatching(distributed.Batching{Off: true})), keys, a)
		})
		// The same load through the default store: concurrent calls share pipelines.
		b.Run(a.Name()+"/batched", func(b *testing.B) {
			s := teststore.Redis(b, c, distributed.WithPrefix("bench:"))
			defer s.Close()
			benchApply(b, s, keys, a)
		})
	}
}

// benchApply runs Apply on s from benchGoroutines goroutines over keys and reports
// decisions per second.
func benchApply(b *testing.B, s *distributed.Store, keys []string, a algo.Algorithm) {
	benchtest.Decisions(b, benchGoroutines, keys, func(ctx context.Context, key string) error {
		_, err := s.Apply(ctx, key, a, algo.Request{N: 1})
		return err
	})
}
