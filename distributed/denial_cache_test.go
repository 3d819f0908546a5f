package distributed_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
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

// TestDenialCacheAbuse hammers one key at far above its limit from 64 goroutines through
// a store at the server's time, once without and once with the cache, and compares the
// commands Redis processed (INFO stats) and what was admitted: with the cache, Redis must
// see at most 5% of the commands, and the key must still admit its rate (no grant lost
// beyond the probes' round trips, none above the limit).
func TestDenialCacheAbuse(t *testing.T) {
	if testing.Short() {
		t.Skip("measures for 2 × 1 s")
	}
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 60*time.Second)
	info := srv.Client(t)
	const rate, burst, goroutines = 100, 100, 64
	a := algo.TokenBucket{Rate: rate, Burst: burst}
	type result struct {
		requests, admitted, commands int64
		elapsed                      time.Duration
	}
	run := func(opts ...distributed.Option) result {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true, PoolSize: goroutines})
		defer c.Close()
		s := teststore.Redis(t, c, append([]distributed.Option{distributed.WithPrefix(freshPrefix()),
			distributed.WithTimeout(testTimeout)}, opts...)...)
		defer s.Close()
		before := commandsProcessed(t, ctx, info)
		var requests, admitted atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		stop := start.Add(time.Second)
		for g := 0; g < goroutines; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stop) {
					d, err := s.Apply(ctx, "hammered", a, algo.Request{N: 1})
					if err != nil {
						t.Error(err)
						return
					}
					requests.Add(1)
					if d.Allowed {
						admitted.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		return result{requests.Load(), admitted.Load(), commandsProcessed(t, ctx, info) - before - 1, elapsed}
	}
	plain := run()
	cached := run(distributed.WithDenialCache(distributed.DenialCache{}))
	for _, r := range []struct {
		name string
		result
	}{{"plain", plain}, {"cached", cached}} {
		secs := r.elapsed.Seconds()
		t.Logf("%-6s %9.0f requests/s (%.0f× the limit), %7.0f Redis commands/s, admitted %d in %.2fs",
			r.name, float64(r.requests)/secs, float64(r.requests)/secs/rate, float64(r.commands)/secs, r.admitted, secs)
		if max := int64(burst + rate*secs + 1); r.admitted > max {
			t.Errorf("%s: admitted %d, above burst + rate × elapsed = %d", r.name, r.admitted, max)
		}
		if min := int64(burst + 0.8*rate*secs); r.admitted < min {
			t.Errorf("%s: admitted %d, below burst + 80%% of rate × elapsed = %d", r.name, r.admitted, min)
		}
	}
	if plain.requests < 100*rate*int64(plain.elapsed/time.Second) {
		t.Logf("the plain run offered less than 100× the limit: the machine is too loaded for the figure")
	}
	if ratio := float64(cached.commands) / cached.elapsed.Seconds() / (float64(plain.commands) / plain.elapsed.Seconds()); ratio > 0.05 {
		t.Errorf("with the cache Redis processed %.1f%% of the commands per second it processed without, want ≤ 5%%", 100*ratio)
	} else {
		t.Logf("with the cache: %.2f%% of the commands per second", 100*ratio)
	}
}

// commandsProcessed reads total_commands_processed from INFO stats.
func commandsProcessed(t *testing.T, ctx context.Context, c *redis.Client) int64 {
	t.Helper()
	s, err := c.Info(ctx, "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	return statField(t, s)
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
