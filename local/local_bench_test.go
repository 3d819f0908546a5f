package local

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

// BenchmarkApply measures one decision on an existing key: the hot path must not allocate.
func BenchmarkApply(b *testing.B) {
	algs := []algo.Algorithm{
		algo.TokenBucket{Rate: 1e9, Burst: 1e9},
		algo.GCRA{Rate: 1e6, Burst: 1e9}, // GCRA allows at most 1e6/s
		algo.LeakyBucket{Rate: 1e9, Capacity: 1e9},
		algo.FixedWindow{Limit: 1 << 50, Window: time.Hour},
		algo.SlidingWindowCounter{Limit: 1 << 50, Window: time.Hour},
		algo.SlidingWindowLog{Limit: 1 << 50, Window: time.Millisecond},
	}
	for _, a := range algs {
		b.Run(a.Name(), func(b *testing.B) {
			s := mustNew(b, WithSweepInterval(0))
			defer s.Close()
			ctx := context.Background()
			req := algo.Request{N: 1}
			if _, err := s.Apply(ctx, "key", a, req); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Apply(ctx, "key", a, req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkApplyParallel spreads decisions over 1,000 existing keys from every P.
func BenchmarkApplyParallel(b *testing.B) {
	s := mustNew(b, WithSweepInterval(0))
	defer s.Close()
	ctx := context.Background()
	var a algo.Algorithm = algo.TokenBucket{Rate: 1e9, Burst: 1e9}
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
		if _, err := s.Apply(ctx, keys[i], a, algo.Request{N: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := s.Apply(ctx, keys[i%len(keys)], a, algo.Request{N: 1}); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}

// TestRealMicros checks the reading of the real clock against time.Now around it.
func TestRealMicros(t *testing.T) {
	t.Parallel()
	for i := 0; i < 1000; i++ {
		before := time.Now().UnixMicro()
		got := realMicros()
		after := time.Now().UnixMicro()
		if got < before || got > after {
			t.Fatalf("realMicros() = %d, want within [%d, %d]", got, before, after)
		}
	}
}

// TestShardSize checks that shardPad fills a shard to a multiple of 128 bytes on 64-bit
// platforms (see shard).
func TestShardSize(t *testing.T) {
	t.Parallel()
	if strconv.IntSize != 64 {
		t.Skip("the padding is exact on 64-bit platforms only")
	}
	if got := reflect.TypeFor[shard]().Size(); got%128 != 0 {
		t.Fatalf("a shard takes %d bytes, want a multiple of 128 (shardFields: %d)", got, reflect.TypeFor[shardFields]().Size())
	}
}

// BenchmarkApplyZipf is one decision on zipf-drawn keys of a population held in full (the
// bench module's keyed rows, on the store alone): 1k keys, in cache; 64k, not all of them.
func BenchmarkApplyZipf(b *testing.B) {
	for _, n := range []int{1_000, 1 << 16} {
		b.Run("keys="+strconv.Itoa(n), func(b *testing.B) {
			s := mustNew(b, WithSweepInterval(0))
			defer s.Close()
			ctx := context.Background()
			var a algo.Algorithm = algo.TokenBucket{Rate: 1e9, Burst: 1 << 30}
			keys := make([]string, n)
			for i := range keys {
				keys[i] = "user:" + strconv.Itoa(i)
				if _, err := s.Apply(ctx, keys[i], a, algo.Request{N: 1}); err != nil {
					b.Fatal(err)
				}
			}
			z := rand.NewZipf(rand.New(rand.NewPCG(1, uint64(n))), 1.1, 1, uint64(n-1))
			seq := make([]int32, 1<<16)
			for i := range seq {
				seq[i] = int32(z.Uint64())
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Apply(ctx, keys[seq[i&(len(seq)-1)]], a, algo.Request{N: 1}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
