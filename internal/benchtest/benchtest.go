package benchtest

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
)

// Decisions runs call from about goroutines goroutines (b.SetParallelism rounds to a
// multiple of GOMAXPROCS) over keys, b.N calls in all, and reports decisions/s besides
// ns/op and the allocations. Each goroutine starts elsewhere in the key space and walks it
// in order. b fails, after the run, if any call returned an error, naming the first.
func Decisions(b *testing.B, goroutines int, keys []string, call func(ctx context.Context, key string) error) {
	b.Helper()
	var next, failed atomic.Int64
	var firstErr atomic.Value
	b.SetParallelism(max(1, goroutines/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		i := int(next.Add(7919)) // a prime: the goroutines' starts spread over the keys
		for pb.Next() {
			i++
			if err := call(ctx, keys[i%len(keys)]); err != nil {
				failed.Add(1)
				firstErr.CompareAndSwap(nil, err)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d calls failed, the first with: %v", n, b.N, firstErr.Load())
	}
}
