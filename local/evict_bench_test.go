package local

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
)

// BenchmarkInsert measures a decision on a key never seen before: into an unbounded store,
// into a full store whose held keys are idle (room is made by evicting them), and into a
// full store whose held keys are all still limiting (nothing can go: the overflow policy).
// Making room must cost at most about as much again as the insert itself.
func BenchmarkInsert(b *testing.B) {
	const maxKeys = 10_000
	fw := algo.FixedWindow{Limit: 5, Window: time.Hour}
	for _, bc := range []struct {
		name    string
		maxKeys int
		step    time.Duration // fake time added after each insert
	}{
		{"unbounded", 0, 0},
		{"full-idle", maxKeys, time.Second}, // an hour's window: ~3,600 of the held keys are live
		{"full-busy", maxKeys, 0},           // every held key is live: nothing may be evicted
	} {
		b.Run(bc.name, func(b *testing.B) {
			clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			s := mustNew(b, WithClock(clk), WithSweepInterval(0), WithMaxKeys(bc.maxKeys), WithShards(8))
			defer s.Close()
			ctx := context.Background()
			req := algo.Request{N: 1}
			buf := []byte("flood:")
			key := func(i int) string { return string(strconv.AppendInt(buf[:6], int64(i), 10)) }
			for i := 0; i < maxKeys; i++ { // the same warm-up for every case
				if _, err := s.Apply(ctx, key(-i-1), fw, req); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.Apply(ctx, key(i), fw, req); err != nil {
					b.Fatal(err)
				}
				if bc.step > 0 {
					clk.Add(bc.step)
				}
			}
		})
	}
}
