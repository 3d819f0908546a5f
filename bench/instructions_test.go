package bench

import (
	"context"
	"os"
	"testing"
	"time"

	slimiter "github.com/sethvargo/go-limiter"
	"golang.org/x/time/rate"

	"github.com/ratekit/limiter"
)

// The BenchmarkInstr benchmarks make the local contenders' calls from one goroutine, each
// call inside a function of its own (never inlined), so that callgrind counts the
// instructions of exactly those calls, which a shared machine measures where it cannot
// time them:
//
//	go test -c -o bench.test .
//	BENCH_INSTR=1 GOGC=off GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind \
//	    --toggle-collect='*bench.instrOurs' ./bench.test -test.run='^$' \
//	    -test.bench='^BenchmarkInstrOurs1$' -test.benchtime=200000x
//	callgrind_annotate callgrind.out.*   # PROGRAM TOTALS / 200001 calls = Ir per call
//
// (GOGC=off and GOMAXPROCS=1 keep the collector and the scheduler out of the counted
// calls.) They run only with BENCH_INSTR=1 in the environment, so that `make bench`,
// which times the contenders, does not list them. Under valgrind the vDSO is not used: the clock reads count their own
// instructions only, not the kernel's clock code, which time.Now runs twice (the wall
// and the monotonic clocks) and the local store once.

// BenchmarkInstrOurs1 is ratekit-allow of BenchmarkLocalSingleKey; count instrOurs.
func BenchmarkInstrOurs1(b *testing.B) {
	instrOnly(b)
	ctx := context.Background()
	l := newLimiter(b, newLocal(b))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		instrOurs(ctx, l, "key")
	}
}

// BenchmarkInstrXTime1 is x-time-rate of BenchmarkLocalSingleKey; count instrXTime.
func BenchmarkInstrXTime1(b *testing.B) {
	instrOnly(b)
	l := rate.NewLimiter(localRate, localBurst)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		instrXTime(l)
	}
}

// BenchmarkInstrNow is time.Now alone; count instrNow.
func BenchmarkInstrNow(b *testing.B) {
	instrOnly(b)
	for i := 0; i < b.N; i++ {
		instrNow()
	}
}

// BenchmarkInstrOurs1k is ratekit-allow of BenchmarkLocalKeyed at 1,000 keys; count
// instrOursKeyed.
func BenchmarkInstrOurs1k(b *testing.B) {
	instrOnly(b)
	ctx := context.Background()
	ks := keysFor(1000)
	l := newLimiter(b, newLocal(b))
	for _, k := range ks.keys {
		_, _ = l.Allow(ctx, k)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		instrOursKeyed(ctx, l, ks.keys[ks.seq[i&(seqLen-1)]])
	}
}

// BenchmarkInstrSeth1k is sethvargo-memorystore of BenchmarkLocalKeyed at 1,000 keys;
// count instrSeth.
func BenchmarkInstrSeth1k(b *testing.B) {
	instrOnly(b)
	ctx := context.Background()
	ks := keysFor(1000)
	s := newSethvargo(b)
	for _, k := range ks.keys {
		_, _, _, _, _ = s.Take(ctx, k)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		instrSeth(ctx, s, ks.keys[ks.seq[i&(seqLen-1)]])
	}
}

//go:noinline
func instrOurs(ctx context.Context, l *limiter.Limiter, key string) bool {
	d, _ := l.Allow(ctx, key)
	return d.Allowed
}

//go:noinline
func instrOursKeyed(ctx context.Context, l *limiter.Limiter, key string) bool {
	d, _ := l.Allow(ctx, key)
	return d.Allowed
}

//go:noinline
func instrXTime(l *rate.Limiter) bool { return l.AllowN(time.Now(), 1) }

//go:noinline
func instrNow() int64 { return time.Now().UnixNano() }

//go:noinline
func instrSeth(ctx context.Context, s slimiter.Store, key string) bool {
	_, _, _, ok, _ := s.Take(ctx, key)
	return ok
}

// instrOnly skips an instruction-counting benchmark unless BENCH_INSTR=1.
func instrOnly(b *testing.B) {
	if os.Getenv("BENCH_INSTR") != "1" {
		b.Skip("instruction counting only: set BENCH_INSTR=1 (see instructions_test.go)")
	}
}
