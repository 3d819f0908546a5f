package bench

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/benchtest"
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
		s, err := distributed.New(redisClient(b, addr), distributed.WithPrefix("bench:"))
		if err != nil {
			b.Fatal(err)
		}
		benchFacade(b, s, a)
	})
	b.Run("ratekit-token-bucket-leased-100", func(b *testing.B) {
		s, err := distributed.New(redisClient(b, addr), distributed.WithPrefix("bench:"))
		if err != nil {
			b.Fatal(err)
		}
		ls, err := leasing.New(s, 100)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = ls.Close() })
		benchFacade(b, ls, a)
	})
	b.Run("redis_rate-gcra", func(b *testing.B) {
		l := redis_rate.NewLimiter(redisClient(b, addr))
		lim := redis_rate.Limit{Rate: 1e9, Burst: 1e9, Period: time.Second}
		runRedisKeys(b, hotKey, func(ctx context.Context, key string) error {
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
			before := commands(b, c)
			benchFacade(b, s, a)
			b.ReportMetric(float64(commands(b, c)-before-1)/b.Elapsed().Seconds(), "redis-cmds/s")
		})
	}
	b.Run("redis_rate-gcra", func(b *testing.B) {
		c := redisClient(b, addr)
		l := redis_rate.NewLimiter(c)
		lim := redis_rate.Limit{Rate: redisRate, Burst: redisBurst, Period: time.Second}
		before := commands(b, c)
		runRedisKeys(b, hotKey, func(ctx context.Context, key string) error {
			_, err := l.Allow(ctx, key, lim)
			return err
		})
		b.ReportMetric(float64(commands(b, c)-before-1)/b.Elapsed().Seconds(), "redis-cmds/s")
	})
}

// benchFacade runs the facade's Allow over s on the hot key.
func benchFacade(b *testing.B, s limiterStore, a algo.Algorithm) {
	l, err := limiter.New(s, a)
	if err != nil {
		b.Fatal(err)
	}
	runRedisKeys(b, hotKey, func(ctx context.Context, key string) error {
		_, err := l.Allow(ctx, key)
		return err
	})
}

type limiterStore interface {
	Apply(context.Context, string, algo.Algorithm, algo.Request) (algo.Decision, error)
	Refund(context.Context, string, algo.Algorithm, int64, int64) error
	Close() error
}

// runRedisKeys runs call from 64 goroutines over keys and reports decisions/s.
func runRedisKeys(b *testing.B, keys []string, call func(ctx context.Context, key string) error) {
	benchtest.Decisions(b, redisGoroutines, keys, call)
}

// commands reads total_commands_processed from INFO stats.
func commands(b *testing.B, c *redis.Client) int64 {
	s, err := c.Info(context.Background(), "stats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("no total_commands_processed in INFO stats")
	return 0
}
