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

// BenchmarkApplyAll compares, on one client with 64 goroutines over 10,000 keys: one rule
// (Apply), two rules in one composite script (ApplyAll), plain and batched, and the same
// two rules as two Apply calls (what a composite over different keys costs).
func BenchmarkApplyAll(b *testing.B) {
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
	rules := []algo.Algorithm{
		algo.TokenBucket{Rate: 100, Burst: 100},
		algo.Named(algo.SlidingWindowLog{Limit: 100, Window: time.Second}, "w"),
	}
	s := teststore.Redis(b, c, distributed.WithPrefix("bench-multi:"))
	batched := teststore.Redis(b, c, distributed.WithPrefix("bench-multi:"), distributed.WithBatching(distributed.Batching{}))
	b.Cleanup(func() { _ = batched.Close() })
	for _, bc := range []struct {
		name string
		call func(ctx context.Context, key string) error
	}{
		{"apply-1-rule", func(ctx context.Context, key string) error {
			_, err := s.Apply(ctx, key, rules[0], algo.Request{N: 1})
			return err
		}},
		{"applyall-2-rules", func(ctx context.Context, key string) error {
			_, _, err := s.ApplyAll(ctx, key, rules, algo.Request{N: 1})
			return err
		}},
		{"applyall-2-rules/batched", func(ctx context.Context, key string) error {
			_, _, err := batched.ApplyAll(ctx, key, rules, algo.Request{N: 1})
			return err
		}},
		{"apply-2-rules-in-turn", func(ctx context.Context, key string) error {
			for _, a := range rules {
				if _, err := s.Apply(ctx, key, a, algo.Request{N: 1}); err != nil {
					return err
				}
			}
			return nil
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			benchtest.Decisions(b, benchGoroutines, keys, bc.call)
		})
	}
}
