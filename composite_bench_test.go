package limiter_test

import (
	"context"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
)

// BenchmarkAll compares one rule with a composite of two, on one local store (one atomic
// ApplyAll) and on two (two calls, refund semantics), all granting.
func BenchmarkAll(b *testing.B) {
	st1, st2 := teststore.Local(b, local.WithSweepInterval(0)), teststore.Local(b, local.WithSweepInterval(0))
	b.Cleanup(func() { _ = st1.Close(); _ = st2.Close() })
	tb := algo.TokenBucket{Rate: 1e9, Burst: 1 << 40}
	fw := algo.FixedWindow{Limit: 1 << 40, Window: time.Second}
	single, _ := limiter.New(st1, tb)
	r1, _ := limiter.New(st1, tb)
	r2, _ := limiter.New(st1, fw)
	r3, _ := limiter.New(st2, fw)
	oneStore, _ := limiter.All(r1, r2)
	twoStores, _ := limiter.All(r1, r3)
	for _, bc := range []struct {
		name string
		l    *limiter.Limiter
	}{{"single", single}, {"all-one-store", oneStore}, {"all-two-stores", twoStores}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if d, err := bc.l.Allow(ctx, "k"); err != nil || !d.Allowed {
					b.Fatal(d, err)
				}
			}
		})
	}
}
