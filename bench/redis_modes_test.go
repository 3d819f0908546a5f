package bench

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/leasing"
)

// hotKey is the one key of BenchmarkRedisHotKey and BenchmarkRedisAbuse.
var hotKey = []string{"hot"}

// BenchmarkRedisHotKey: one key with a limit far above the load (it never denies), 64
// goroutines, through the facade: the default store (its concurrent calls batched), the
// plain store (Batching{Off: true}: one script and one round trip per decision, as every
// peer), or slices of 100 permits leased by package leasing over the default store
// (issue 13, target 4, kept by issue 23: ≥ 10× plain).
func BenchmarkRedisHotKey(b *testing.B) {
	addr := redisServer(b)
	a := algo.TokenBucket{Rate: 1e9, Burst: 1e9}
	b.Run("ratekit-token-bucket", func(b *testing.B) {
		c := redisClient(b, addr)
		s, err := distributed.New(c, distributed.WithPrefix("bench:"))
		if err != nil {
			b.Fatal(err)
		}
		benchFacade(b, c, s, a)
	})
	b.Run("ratekit-token-bucket-unbatched", func(b *testing.B) {
		c := redisClient(b, addr)
		s, err := distributed.New(c, distributed.WithPrefix("bench:"),
			distributed.WithBatching(distributed.Batching{Off: true}))
		if err != nil {
			b.Fatal(err)
		}
		benchFacade(b, c, s, a)
	})
	b.Run("ratekit-token-bucket-leased-100", func(b *testing.B) {
		c := redisClient(b, addr)
		s, err := distributed.New(c, distributed.WithPrefix("bench:"))
		if err != nil {
			b.Fatal(err)
		}
		rtt := sliceRoundTrip(b, s, a, leaseSlice)
		ls, err := leasing.New(s, leaseSlice)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = ls.Close() })
		benchFacade(b, c, ls, a)
		b.ReportMetric(float64(leaseSlice)/rtt.Seconds(), "bound-decisions/s")
	})
	b.Run("redis_rate-gcra", func(b *testing.B) {
		c := redisClient(b, addr)
		l := redis_rate.NewLimiter(c)
		lim := redis_rate.Limit{Rate: 1e9, Burst: 1e9, Period: time.Second}
		runRedisKeys(b, c, hotKey, func(ctx context.Context, key string) error {
			_, err := l.Allow(ctx, key, lim)
			return err
		})
	})
}

// BenchmarkRedisAbuse: one key hammered by 64 goroutines far beyond its limit (token
// bucket 100/s), with and without the denial cache (issue 13, target 3: Redis commands/s
// with the cache ≤ 5 % of without). Reports the commands Redis processed per second.
func BenchmarkRedisAbuse(b *testing.B) {
	addr := redisServer(b)
	a := algo.TokenBucket{Rate: redisRate, Burst: redisBurst}
	for _, mode := range []string{"ratekit-token-bucket", "ratekit-token-bucket-denial-cache"} {
		b.Run(mode, func(b *testing.B) {
			c := redisClient(b, addr)
			opts := []distributed.Option{distributed.WithPrefix("bench:")}
			if strings.HasSuffix(mode, "denial-cache") {
				opts = append(opts, distributed.WithDenialCache(distributed.DenialCache{}))
			}
			s, err := distributed.New(c, opts...)
			if err != nil {
				b.Fatal(err)
			}
			u := benchFacade(b, c, s, a)
			b.ReportMetric(float64(u.calls)/b.Elapsed().Seconds(), "redis-cmds/s")
		})
	}
	b.Run("redis_rate-gcra", func(b *testing.B) {
		c := redisClient(b, addr)
		l := redis_rate.NewLimiter(c)
		lim := redis_rate.Limit{Rate: redisRate, Burst: redisBurst, Period: time.Second}
		u := runRedisKeys(b, c, hotKey, func(ctx context.Context, key string) error {
			_, err := l.Allow(ctx, key, lim)
			return err
		})
		b.ReportMetric(float64(u.calls)/b.Elapsed().Seconds(), "redis-cmds/s")
	})
}

// benchFacade runs the facade's Allow over s (a store on the Redis of c) on the hot key.
func benchFacade(b *testing.B, c *redis.Client, s limiterStore, a algo.Algorithm) serverUse {
	l, err := limiter.New(s, a)
	if err != nil {
		b.Fatal(err)
	}
	return runRedisKeys(b, c, hotKey, func(ctx context.Context, key string) error {
		_, err := l.Allow(ctx, key)
		return err
	})
}

// leaseSlice is the slice of BenchmarkRedisHotKey's leased row.
const leaseSlice = 100

// sliceRoundTrip returns the median time s takes to grant one slice of n permits when
// nothing else runs: a lease of n permits is bound to n of them per round trip of its
// refill, whatever its code, because it holds and asks for at most n at once (the
// documented bound is processes × n) and each permit is counted by the inner store before
// it can be granted. So n / round trip bounds the leased row's decisions/s (reported as
// bound-decisions/s); the round trip is what limits it, not the lease.
func sliceRoundTrip(b *testing.B, s *distributed.Store, a algo.Algorithm, n int64) time.Duration {
	ctx := context.Background()
	const probes = 301
	rtts := make([]time.Duration, probes)
	for i := range rtts {
		start := time.Now()
		if _, err := s.Apply(ctx, "rtt-probe", a, algo.Request{N: n}); err != nil {
			b.Fatal(err)
		}
		rtts[i] = time.Since(start)
	}
	slices.Sort(rtts)
	return rtts[probes/2]
}

type limiterStore interface {
	Apply(context.Context, string, algo.Algorithm, algo.Request) (algo.Decision, error)
	Refund(context.Context, string, algo.Algorithm, int64, int64) error
	Close() error
}
