package limiter_test

import (
	"context"
	"testing"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
)

// nopObserver is the cheapest Observer: what is left is the cost of building and passing
// the events and of timing the store call.
type nopObserver struct{}

func (nopObserver) Decided(context.Context, limiter.Event)   {}
func (nopObserver) BreakerChanged(_, _ limiter.BreakerState) {}

// observedLimiter is a limiter over a fresh local store on real time, with opts.
func observedLimiter(tb testing.TB, opts ...limiter.Option) *limiter.Limiter {
	tb.Helper()
	st := teststore.Local(tb, local.WithSweepInterval(0))
	tb.Cleanup(func() { _ = st.Close() })
	l, err := limiter.New(st, algo.TokenBucket{Rate: 1e9, Burst: 1 << 40}, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// TestObserverDoesNotAllocate: Allow allocates nothing with an Observer, in shadow mode,
// or with neither.
func TestObserverDoesNotAllocate(t *testing.T) {
	ctx := context.Background()
	for name, opts := range map[string][]limiter.Option{
		"unset":    nil,
		"observer": {limiter.WithObserver(nopObserver{})},
		"shadow":   {limiter.WithShadow(), limiter.WithObserver(nopObserver{})},
	} {
		l := observedLimiter(t, opts...)
		_, _ = l.Allow(ctx, "k")
		if got := testing.AllocsPerRun(1000, func() { _, _ = l.Allow(ctx, "k") }); got != 0 {
			t.Errorf("%s: Allow allocates %v times per call, want 0", name, got)
		}
	}
}

// BenchmarkAllowObserver is Allow on one goroutine and one key: without an Observer (the
// direct path, as BenchmarkAllow), with a no-op one, and in shadow mode.
func BenchmarkAllowObserver(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct {
		name string
		opts []limiter.Option
	}{
		{"unset", nil},
		{"observer", []limiter.Option{limiter.WithObserver(nopObserver{})}},
		{"shadow", []limiter.Option{limiter.WithShadow()}},
	} {
		b.Run(c.name, func(b *testing.B) {
			l := observedLimiter(b, c.opts...)
			_, _ = l.Allow(ctx, "k")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := l.Allow(ctx, "k"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
