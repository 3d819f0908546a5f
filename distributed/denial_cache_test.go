package distributed_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
)

// countCalls is a go-redis hook that counts the commands a client sends.
type countCalls struct{ n atomic.Int64 }

func (h *countCalls) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *countCalls) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.n.Add(1); return next(ctx, cmd) }
}
func (h *countCalls) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.n.Add(int64(len(cmds))); return next(ctx, cmds) }
}

// cacheAlgorithms are the algorithms whose denials the cache reuses, tight enough that a
// random walk meets many denials.
func cacheAlgorithms() []algo.Algorithm {
	return []algo.Algorithm{
		algo.TokenBucket{Rate: 10, Burst: 5},
		algo.GCRA{Rate: 10, Burst: 5},
		algo.LeakyBucket{Rate: 10, Capacity: 5},
		algo.FixedWindow{Limit: 5, Window: time.Second},
		algo.SlidingWindowLog{Limit: 5, Window: time.Second},
		algo.SlidingWindowCounter{Limit: 5, Window: time.Second},
		algo.SmoothBursty{Rate: 10},
		algo.SmoothWarmingUp{Rate: 10, Warmup: time.Second},
	}
}

// TestDenialCacheExact drives a cached store and a plain one on the same Redis keys with
// one fake client clock. Before every Apply of the cached store, the plain store peeks the
// same request at the same instant: the answers must be identical, whether the cached
// store went to Redis or not (to the µs of the scripts' rounding), and most denials must
// be answered without a round trip.
func TestDenialCacheExact(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 60*time.Second)
	for _, a := range cacheAlgorithms() {
		t.Run(a.Name(), func(t *testing.T) {
			clk := fakeClock()
			prefix := freshPrefix()
			calls := &countCalls{}
			cc := redistest.WithoutExpiry(redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true}))
			cc.AddHook(calls)
			t.Cleanup(func() { _ = cc.Close() })
			cached := teststore.Redis(t, cc, distributed.WithPrefix(prefix), distributed.WithClientClock(clk),
				distributed.WithTimeout(testTimeout), distributed.WithDenialCache(distributed.DenialCache{}))
			plain := teststore.Redis(t, redistest.WithoutExpiry(srv.Client(t)), distributed.WithPrefix(prefix),
				distributed.WithClientClock(clk), distributed.WithTimeout(testTimeout))
			rng := rand.New(rand.NewPCG(1, uint64(len(a.Name()))))
			var denials, applies int64
			for i := 0; i < 1500; i++ {
				clk.Add(time.Duration(rng.IntN(20_000)) * time.Microsecond)
				req := algo.Request{N: 1}
				switch rng.IntN(8) {
				case 0:
					req.N = 2
				case 1:
					req.MaxWait = 50 * time.Millisecond
				}
				want, err := plain.Peek(ctx, "k", a, req)
				if err != nil {
					t.Fatal(err)
				}
				before := calls.n.Load()
				got, err := cached.Apply(ctx, "k", a, req)
				if err != nil {
					t.Fatal(err)
				}
				if calls.n.Load() > before {
					applies++
				}
				if !got.Allowed {
					denials++
				}
				// The scripts round each wait up to whole µs afresh: a reused denial may
				// count down to within 1 µs of the store's answer.
				if d := got.RetryAfter - want.RetryAfter; !got.Allowed && !want.Allowed && (d == time.Microsecond || d == -time.Microsecond) {
					got.RetryAfter = want.RetryAfter
				}
				if d := got.ResetAfter - want.ResetAfter; d == time.Microsecond || d == -time.Microsecond {
					got.ResetAfter = want.ResetAfter
				}
				// Remaining is the store's at the denial: permits refilled since are not
				// counted (a lower bound; 0 either way for N = 1).
				if !got.Allowed && !want.Allowed && got.Remaining <= want.Remaining && (req.N > 1 || got.Remaining == 0) {
					got.Remaining = want.Remaining
				}
				// A peek's Remaining is what was there before the grant (algo.Peek).
				if got.Allowed && want.Allowed && got.Remaining <= want.Remaining {
					got.Remaining = want.Remaining
				}
				if got != want {
					t.Fatalf("step %d at %v, %+v: cached store answered %+v, the store's state says %+v",
						i, clk.Now().Sub(epoch), req, got, want)
				}
			}
			if reused := 1500 - applies; reused < denials/2 {
				t.Errorf("%d denials, but only %d answers reused a denial", denials, reused)
			}
			t.Logf("%d denials, %d answered without a round trip", denials, 1500-applies)
		})
	}
}

// TestDenialCacheRefund checks the one way a cached denial differs (a refund made through
// another store: the cached store keeps denying until the deadline the store gave, never
// later) and that a Refund or Reset through the cached store itself forgets the denial.
func TestDenialCacheRefund(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 30*time.Second)
	a := algo.TokenBucket{Rate: 1, Burst: 1}
	req := algo.Request{N: 1}
	setup := func(t *testing.T, opts ...distributed.Option) (cached, other *distributed.Store, clk interface{ Add(time.Duration) }, at int64) {
		c := fakeClock()
		prefix := freshPrefix()
		cached = teststore.Redis(t, redistest.WithoutExpiry(srv.Client(t)), append([]distributed.Option{
			distributed.WithPrefix(prefix), distributed.WithClientClock(c), distributed.WithTimeout(testTimeout)}, opts...)...)
		other = teststore.Redis(t, redistest.WithoutExpiry(srv.Client(t)), distributed.WithPrefix(prefix),
			distributed.WithClientClock(c), distributed.WithTimeout(testTimeout))
		d, err := cached.Apply(ctx, "k", a, req)
		if err != nil || !d.Allowed {
			t.Fatalf("first Apply: %+v, %v", d, err)
		}
		d2, err := cached.Apply(ctx, "k", a, req)
		if err != nil || d2.Allowed || d2.RetryAfter != time.Second {
			t.Fatalf("second Apply: %+v, %v; want denied for 1s", d2, err)
		}
		return cached, other, c, d.At
	}
	cacheOpt := distributed.WithDenialCache(distributed.DenialCache{})

	t.Run("elsewhere", func(t *testing.T) {
		cached, other, clk, at := setup(t, cacheOpt)
		if err := other.Refund(ctx, "k", a, 1, at); err != nil {
			t.Fatal(err)
		}
		clk.Add(300 * time.Millisecond)
		if p, _ := other.Peek(ctx, "k", a, req); !p.Allowed {
			t.Fatalf("after the refund the store should grant, peek says %+v", p)
		}
		d, err := cached.Apply(ctx, "k", a, req)
		if err != nil || d.Allowed || d.RetryAfter != 700*time.Millisecond {
			t.Fatalf("cached store: %+v, %v; want the cached denial, 700ms left of the store's second", d, err)
		}
		clk.Add(700 * time.Millisecond) // the store's deadline: the cache lets go
		if d, err := cached.Apply(ctx, "k", a, req); err != nil || !d.Allowed {
			t.Fatalf("at the deadline: %+v, %v; want granted", d, err)
		}
	})
	t.Run("max-age", func(t *testing.T) {
		cached, other, clk, at := setup(t, distributed.WithDenialCache(distributed.DenialCache{MaxAge: 100 * time.Millisecond}))
		if err := other.Refund(ctx, "k", a, 1, at); err != nil {
			t.Fatal(err)
		}
		clk.Add(99 * time.Millisecond)
		if d, _ := cached.Apply(ctx, "k", a, req); d.Allowed {
			t.Fatalf("within MaxAge: %+v, want the cached denial", d)
		}
		clk.Add(time.Millisecond)
		if d, err := cached.Apply(ctx, "k", a, req); err != nil || !d.Allowed {
			t.Fatalf("after MaxAge: %+v, %v; want granted", d, err)
		}
	})
	t.Run("refund-here", func(t *testing.T) {
		cached, _, _, at := setup(t, cacheOpt)
		if err := cached.Refund(ctx, "k", a, 1, at); err != nil {
			t.Fatal(err)
		}
		if d, err := cached.Apply(ctx, "k", a, req); err != nil || !d.Allowed {
			t.Fatalf("after a refund through the cached store: %+v, %v; want granted", d, err)
		}
	})
	t.Run("reset-here", func(t *testing.T) {
		cached, _, _, _ := setup(t, cacheOpt)
		if err := cached.Reset(ctx, "k", a); err != nil {
			t.Fatal(err)
		}
		if d, err := cached.Apply(ctx, "k", a, req); err != nil || !d.Allowed {
			t.Fatalf("after a Reset through the cached store: %+v, %v; want granted", d, err)
		}
	})
	t.Run("config-change", func(t *testing.T) {
		cached, _, _, _ := setup(t, cacheOpt)
		bigger := algo.TokenBucket{Rate: 1, Burst: 3} // same slot, another config: not reused
		if d, err := cached.Apply(ctx, "k", bigger, req); err != nil || d.Limit != 3 {
			t.Fatalf("another config: %+v, %v; want Redis's answer under it (Limit 3)", d, err)
		}
	})
}

func TestDenialCacheOptions(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for _, dc := range []distributed.DenialCache{{MaxEntries: -1}, {MaxAge: -time.Second}} {
		if _, err := distributed.New(c, distributed.WithDenialCache(dc)); !errors.Is(err, algo.ErrInvalidConfig) {
			t.Errorf("WithDenialCache(%+v): %v, want ErrInvalidConfig", dc, err)
		}
	}
}

// TestDenialCacheBounded checks that the cache forgets pairs beyond MaxEntries: a key
// denied long ago, pushed out by others, goes to Redis again.
func TestDenialCacheBounded(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 30*time.Second)
	clk := fakeClock()
	calls := &countCalls{}
	cc := redistest.WithoutExpiry(redis.NewClient(&redis.Options{Addr: srv.Addr()}))
	cc.AddHook(calls)
	t.Cleanup(func() { _ = cc.Close() })
	s := teststore.Redis(t, cc, distributed.WithPrefix(freshPrefix()), distributed.WithClientClock(clk),
		distributed.WithTimeout(testTimeout), distributed.WithDenialCache(distributed.DenialCache{MaxEntries: 64}))
	a := algo.FixedWindow{Limit: 1, Window: time.Hour}
	for i := 0; i < 1000; i++ {
		k := "k" + strconv.Itoa(i)
		for j := 0; j < 2; j++ { // a grant, then a denial kept in the cache
			if _, err := s.Apply(ctx, k, a, algo.Request{N: 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := calls.n.Load()
	for i := 0; i < 1000; i++ {
		if d, err := s.Apply(ctx, "k"+strconv.Itoa(i), a, algo.Request{N: 1}); err != nil || d.Allowed {
			t.Fatalf("%+v, %v", d, err)
		}
	}
	// 32 shards of 2 pairs each: at most 64 of the 1000 keys answer from the cache.
	if sent := calls.n.Load() - before; sent < 1000-64 {
		t.Errorf("%d of 1000 denials went to Redis: the cache holds more than MaxEntries", sent)
	}
}

// TestDenialCacheAbuse hammers one key at 100× its limit on a fake client clock (100
// requests every 10 ms of a 100/s token bucket, for 3 s), once without and once with the
// cache, and counts the commands each client sent: with the cache Redis must see at most
// 5% of them, and both stores must admit exactly what the bucket allows (burst + rate ×
// elapsed: no grant lost to the cache, none above the limit). Nothing here depends on how
// fast the machine is; BenchmarkDenialCacheAbuse measures the same on the wall clock with
// 64 goroutines.
func TestDenialCacheAbuse(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 60*time.Second)
	const rate, burst = 100, 100
	const step, perStep, steps = 10 * time.Millisecond, 100, 300
	a := algo.TokenBucket{Rate: rate, Burst: burst}
	run := func(opts ...distributed.Option) (commands, admitted int64) {
		clk := fakeClock()
		calls := &countCalls{}
		c := redistest.WithoutExpiry(redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true}))
		c.AddHook(calls)
		t.Cleanup(func() { _ = c.Close() })
		s := teststore.Redis(t, c, append([]distributed.Option{distributed.WithPrefix(freshPrefix()),
			distributed.WithClientClock(clk), distributed.WithTimeout(testTimeout)}, opts...)...)
		t.Cleanup(func() { _ = s.Close() })
		if _, err := s.Peek(ctx, "warm-up", a, algo.Request{N: 1}); err != nil { // load the script first
			t.Fatal(err)
		}
		before := calls.n.Load()
		for range steps {
			for range perStep {
				d, err := s.Apply(ctx, "hammered", a, algo.Request{N: 1})
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed {
					admitted++
				}
			}
			clk.Add(step)
		}
		return calls.n.Load() - before, admitted
	}
	plainCmds, plainAdmitted := run()
	cachedCmds, cachedAdmitted := run(distributed.WithDenialCache(distributed.DenialCache{}))
	// The first step's requests come at one instant, the last at steps−1 steps later.
	want := int64(burst + rate*(steps-1)*step/time.Second)
	t.Logf("plain: %d commands, admitted %d; cached: %d commands (%.2f%%), admitted %d; bucket allows %d",
		plainCmds, plainAdmitted, cachedCmds, 100*float64(cachedCmds)/float64(plainCmds), cachedAdmitted, want)
	if plainAdmitted != want || cachedAdmitted != want {
		t.Errorf("admitted %d without the cache and %d with it, want %d (burst + rate × elapsed)", plainAdmitted, cachedAdmitted, want)
	}
	if plainCmds < steps*perStep {
		t.Fatalf("the plain store sent %d commands for %d requests", plainCmds, steps*perStep)
	}
	if 20*cachedCmds > plainCmds {
		t.Errorf("with the cache the store sent %d commands, %.1f%% of the %d without, want ≤ 5%%",
			cachedCmds, 100*float64(cachedCmds)/float64(plainCmds), plainCmds)
	}
}

// BenchmarkDenialCacheAbuse hammers one key at far beyond its limit (token bucket, 100/s)
// from 64 goroutines, plain and with WithDenialCache, and reports decisions/s and the
// commands Redis processed per decision (INFO stats, the scripts' own commands included).
func BenchmarkDenialCacheAbuse(b *testing.B) {
	srv := redistest.Start(b)
	info := srv.Client(b)
	ctx := context.Background()
	var a algo.Algorithm = algo.TokenBucket{Rate: 100, Burst: 100} // boxed once, not per call
	for _, mode := range []string{"plain", "cached"} {
		b.Run(mode, func(b *testing.B) {
			c := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: benchGoroutines, ContextTimeoutEnabled: true})
			defer c.Close()
			opts := []distributed.Option{distributed.WithPrefix(freshPrefix())}
			if mode == "cached" {
				opts = append(opts, distributed.WithDenialCache(distributed.DenialCache{}))
			}
			s := teststore.Redis(b, c, opts...)
			before, err := info.Info(ctx, "stats").Result()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.SetParallelism(max(1, benchGoroutines/runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.Apply(ctx, "hammered", a, algo.Request{N: 1}); err != nil {
						b.Error(err)
						return
					}
				}
			})
			elapsed := time.Since(start)
			b.StopTimer()
			after, err := info.Info(ctx, "stats").Result()
			if err != nil {
				b.Fatal(err)
			}
			cmds := statField(b, after) - statField(b, before) - 1
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "decisions/s")
			b.ReportMetric(float64(cmds)/elapsed.Seconds(), "redis-cmds/s")
		})
	}
}

// statField reads total_commands_processed from an INFO stats reply.
func statField(tb testing.TB, s string) int64 {
	for _, line := range strings.Split(s, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_commands_processed:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				tb.Fatal(err)
			}
			return n
		}
	}
	tb.Fatal("no total_commands_processed in INFO stats")
	return 0
}
