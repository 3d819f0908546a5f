package bench

import (
	"context"
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
// goroutines, through the facade: one script per decision, or slices of 100 permits
// leased by package leasing (issue 13, target 4: ≥ 10× plain).
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
	b.Run("ratekit-token-bucket-leased-100", func(b *testing.B) {
		c := redisClient(b, addr)
		s, err := distributed.New(c, distributed.WithPrefix("bench:"))
		if err != nil {
			b.Fatal(err)
		}
		ls, err := leasing.New(s, 100)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = ls.Close() })
		benchFacade(b, c, ls, a)
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

type limiterStore interface {
	Apply(context.Context, string, algo.Algorithm, algo.Request) (algo.Decision, error)
	Refund(context.Context, string, algo.Algorithm, int64, int64) error
	Close() error
}
