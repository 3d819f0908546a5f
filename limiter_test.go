package limiter_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
)

// start is on a whole second, so one-second windows begin there.
var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// algCase is one algorithm at "4 per second", with fill: how many permits to take so that
// a following Reserve of 1 with no bound is granted with a delay.
type algCase struct {
	a    algo.Algorithm
	fill int64
}

func algCases() []algCase {
	return []algCase{
		{algo.FixedWindow{Limit: 4, Window: time.Second}, 4},
		{algo.SlidingWindowLog{Limit: 4, Window: time.Second}, 4},
		{algo.SlidingWindowCounter{Limit: 4, Window: time.Second}, 4},
		{algo.TokenBucket{Rate: 4, Burst: 4}, 4},
		{algo.LeakyBucket{Rate: 4, Capacity: 4}, 2}, // a full queue denies even with Forever
		{algo.GCRA{Rate: 4, Burst: 4}, 4},
	}
}

// newTest returns a limiter over a local store, both on one fake clock.
func newTest(tb testing.TB, a algo.Algorithm, opts ...limiter.Option) (*limiter.Limiter, *clockx.Fake) {
	tb.Helper()
	clk := clockx.NewFake(start)
	st := teststore.Local(tb, local.WithClock(clk), local.WithSweepInterval(0))
	tb.Cleanup(func() { _ = st.Close() })
	l, err := limiter.New(st, a, append([]limiter.Option{limiter.WithClock(clk)}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	return l, clk
}

func allowN(tb testing.TB, l *limiter.Limiter, key string, n int64) limiter.Decision {
	tb.Helper()
	d, err := l.AllowN(context.Background(), key, n)
	if err != nil {
		tb.Fatalf("AllowN(%q, %d): %v", key, n, err)
	}
	return d
}

// sameFuture checks that each pair of keys now answers a sequence of requests identically,
// i.e. that the two states of a pair are equivalent. It consumes the keys' permits and
// moves the clock.
func sameFuture(tb testing.TB, l *limiter.Limiter, clk *clockx.Fake, pairs ...[2]string) {
	tb.Helper()
	ctx := context.Background()
	for i := 0; i < 6; i++ {
		for _, p := range pairs {
			for _, maxWait := range []time.Duration{0, 700 * time.Millisecond} {
				var ds [2]limiter.Decision
				for j, k := range p {
					r, err := l.Reserve(ctx, k, 1, maxWait)
					if err != nil {
						tb.Fatal(err)
					}
					ds[j] = r.Decision()
				}
				if a, b := ds[0], ds[1]; a.Allowed != b.Allowed || a.Wait != b.Wait || a.RetryAfter != b.RetryAfter {
					tb.Fatalf("step %d maxWait %v: key %q got %+v, key %q got %+v", i, maxWait, p[0], a, p[1], b)
				}
			}
		}
		clk.Add(150 * time.Millisecond)
	}
}

func TestAllow(t *testing.T) {
	t.Parallel()
	for _, c := range algCases() {
		t.Run(c.a.Name(), func(t *testing.T) {
			t.Parallel()
			l, clk := newTest(t, c.a)
			for i := int64(0); i < 4; i++ {
				d, err := l.Allow(context.Background(), "k")
				if err != nil {
					t.Fatal(err)
				}
				if !d.Allowed || d.Limit != 4 || d.Remaining != 3-i || d.Wait != 0 {
					t.Fatalf("request %d: %+v, want allowed with Limit 4, Remaining %d", i, d, 3-i)
				}
			}
			d := allowN(t, l, "k", 1)
			if d.Allowed || d.RetryAfter <= 0 || d.RetryAfter == algo.Never {
				t.Fatalf("fifth request: %+v, want denied with a finite RetryAfter", d)
			}
			clk.Add(d.RetryAfter - time.Microsecond)
			if d := allowN(t, l, "k", 1); d.Allowed {
				t.Fatalf("1µs before RetryAfter: %+v, want denied", d)
			}
			clk.Add(time.Microsecond)
			if d := allowN(t, l, "k", 1); !d.Allowed {
				t.Fatalf("at RetryAfter: %+v, want allowed", d)
			}
			if d := allowN(t, l, "other", 4); !d.Allowed || d.Remaining != 0 {
				t.Fatalf("AllowN(4) on a fresh key: %+v, want allowed, Remaining 0", d)
			}
			if d := allowN(t, l, "other2", 5); d.Allowed || d.RetryAfter != algo.Never {
				t.Fatalf("AllowN(5) over a limit of 4: %+v, want denied with RetryAfter Never", d)
			}
		})
	}
}

func TestReserveWaitCancel(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range algCases() {
		t.Run(c.a.Name(), func(t *testing.T) {
			t.Parallel()
			l, clk := newTest(t, c.a)
			for _, k := range []string{"cancelled", "control", "waited", "late", "twice", "twice-control"} {
				allowN(t, l, k, c.fill)
			}
			// A cancelled reservation leaves the key as if it had never been made.
			r, err := l.Reserve(ctx, "cancelled", 1, algo.Forever)
			if err != nil {
				t.Fatal(err)
			}
			if !r.OK() || r.Delay() <= 0 || r.Delay() != r.Decision().Wait {
				t.Fatalf("Reserve: OK=%v Delay=%v Decision=%+v, want OK with Delay = Wait > 0", r.OK(), r.Delay(), r.Decision())
			}
			if err := r.Cancel(ctx); err != nil {
				t.Fatal(err)
			}
			// Cancel twice gives back once.
			for k, cancels := range map[string]int{"twice": 2, "twice-control": 1} {
				r, err := l.Reserve(ctx, k, 1, algo.Forever)
				if err != nil {
					t.Fatal(err)
				}
				for i := 0; i < cancels; i++ {
					if err := r.Cancel(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			// Reserved and waited for: the permits stay taken, and Cancel after the
			// reservation's time has come does nothing.
			before := clk.Now()
			rw, err := l.Reserve(ctx, "waited", 1, algo.Forever)
			if err != nil {
				t.Fatal(err)
			}
			rl, err := l.Reserve(ctx, "late", 1, algo.Forever)
			if err != nil {
				t.Fatal(err)
			}
			delay := rw.Delay()
			if err := rw.Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if got := clk.Now().Sub(before); got != delay {
				t.Fatalf("Wait slept %v, want Delay %v", got, delay)
			}
			if got := rw.Delay(); got != 0 {
				t.Fatalf("Delay after Wait = %v, want 0", got)
			}
			if err := rl.Cancel(ctx); err != nil {
				t.Fatal(err)
			}
			sameFuture(t, l, clk, [2]string{"cancelled", "control"}, [2]string{"twice", "twice-control"},
				[2]string{"late", "waited"})
		})
	}
}

func TestReserveDenied(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, clk := newTest(t, algo.TokenBucket{Rate: 2, Burst: 2})
	allowN(t, l, "k", 2)
	r, err := l.Reserve(ctx, "k", 2, 999*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	retry := r.Decision().RetryAfter
	if r.OK() || r.Delay() != algo.Never || retry <= 0 || retry == algo.Never {
		t.Fatalf("Reserve: OK=%v Delay=%v %+v, want denied, Delay Never, a finite RetryAfter", r.OK(), r.Delay(), r.Decision())
	}
	if err := r.Wait(ctx); !errors.Is(err, algo.ErrInvalidRequest) {
		t.Fatalf("Wait on a denied reservation = %v, want algo.ErrInvalidRequest", err)
	}
	if err := r.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	clk.Add(retry)
	if r, err := l.Reserve(ctx, "k", 2, 999*time.Millisecond); err != nil || !r.OK() || r.Delay() != 999*time.Millisecond {
		t.Fatalf("Reserve after RetryAfter: %v, OK=%v Delay=%v, want granted in 999ms", err, r.OK(), r.Delay())
	}
	clk.Set(start)
	r, err = l.Reserve(ctx, "k3", 3, algo.Forever)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Wait(ctx); r.OK() || !errors.Is(err, limiter.ErrExceedsLimit) {
		t.Fatalf("Reserve(3) over a burst of 2: OK=%v, Wait = %v, want ErrExceedsLimit", r.OK(), err)
	}
	// A negative maxWait is 0: denied now, granted once the tokens are back.
	allowN(t, l, "k4", 2)
	if r, _ := l.Reserve(ctx, "k4", 1, -time.Hour); r.OK() {
		t.Fatal("Reserve with a negative maxWait reserved a future permit")
	}
	clk.Add(500 * time.Millisecond)
	if r, _ := l.Reserve(ctx, "k4", 1, -time.Hour); !r.OK() || r.Delay() != 0 {
		t.Fatalf("Reserve with a permit available: OK=%v Delay=%v", r.OK(), r.Delay())
	}
}

func TestSetAlgorithm(t *testing.T) {
	t.Parallel()
	l, clk := newTest(t, algo.TokenBucket{Rate: 4, Burst: 4})
	allowN(t, l, "k", 4)
	faster := algo.TokenBucket{Rate: 8, Burst: 4}
	if err := l.SetAlgorithm(faster); err != nil {
		t.Fatal(err)
	}
	if got := l.Algorithm(); got != faster {
		t.Fatalf("Algorithm() = %v, want %v", got, faster)
	}
	// Same slot: the bucket is still empty, and refills at the lower rate, 4/s, until its
	// next write (the store cannot know when the rate changed); then at 8/s.
	if d := allowN(t, l, "k", 1); d.Allowed || d.RetryAfter != 250*time.Millisecond {
		t.Fatalf("after SetAlgorithm: %+v, want denied with RetryAfter 250ms", d)
	}
	clk.Add(250 * time.Millisecond)
	if d := allowN(t, l, "k", 1); !d.Allowed {
		t.Fatalf("250ms later: %+v, want allowed", d)
	}
	clk.Add(125 * time.Millisecond)
	if d := allowN(t, l, "k", 1); !d.Allowed {
		t.Fatalf("125ms after that, at 8/s: %+v, want allowed", d)
	}
	// Another slot: fresh state.
	if err := l.SetAlgorithm(algo.GCRA{Rate: 1, Burst: 2}); err != nil {
		t.Fatal(err)
	}
	if d := allowN(t, l, "k", 2); !d.Allowed {
		t.Fatalf("GCRA on a key only a token bucket had used: %+v, want allowed", d)
	}
	// Invalid: refused, the algorithm is unchanged.
	if err := l.SetAlgorithm(algo.GCRA{Rate: -1, Burst: 2}); !errors.Is(err, algo.ErrInvalidConfig) ||
		!strings.Contains(err.Error(), "GCRA.Rate") {
		t.Fatalf("SetAlgorithm(invalid) = %v, want algo.ErrInvalidConfig naming GCRA.Rate", err)
	}
	if err := l.SetAlgorithm(nil); !errors.Is(err, algo.ErrInvalidConfig) {
		t.Fatalf("SetAlgorithm(nil) = %v, want algo.ErrInvalidConfig", err)
	}
	if got, want := l.Algorithm(), (algo.GCRA{Rate: 1, Burst: 2}); got != want {
		t.Fatalf("Algorithm() after failed SetAlgorithm = %v, want %v", got, want)
	}
}

func TestConcurrentAllowNeverOverAdmits(t *testing.T) {
	t.Parallel()
	l, _ := newTest(t, algo.TokenBucket{Rate: 1, Burst: 100})
	if got, want := allowConcurrently(t, l, "shared", 8, 50), int64(100); got != want {
		t.Fatalf("allowed %d of 400 concurrent requests with the clock standing still, want %d", got, want)
	}
}

// allowConcurrently calls l.Allow(key) calls times from each of goroutines goroutines at
// once and returns how many calls were granted; an error fails the test.
func allowConcurrently(t *testing.T, l *limiter.Limiter, key string, goroutines, calls int) int64 {
	t.Helper()
	var granted atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < calls; i++ {
				d, err := l.Allow(context.Background(), key)
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					granted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return granted.Load()
}

func TestAllowDoesNotAllocate(t *testing.T) {
	l, _ := newTest(t, algo.TokenBucket{Rate: 1e6, Burst: 1 << 40})
	ctx := context.Background()
	allowN(t, l, "k", 1)
	if got := testing.AllocsPerRun(1000, func() { _, _ = l.Allow(ctx, "k") }); got != 0 {
		t.Fatalf("Allow on an existing key allocates %v times per call, want 0", got)
	}
}

// TestAllowFastPathKeyFunc checks that Allow on a local store, whose fast path skips the
// pipeline, still limits the key WithKeyFunc makes of the key it is given.
func TestAllowFastPathKeyFunc(t *testing.T) {
	l, _ := newTest(t, algo.TokenBucket{Rate: 1, Burst: 1}, limiter.WithKeyFunc(func(string) string { return "shared" }))
	ctx := context.Background()
	if d, err := l.Allow(ctx, "a"); err != nil || !d.Allowed {
		t.Fatalf("Allow(a) = %+v, %v; want a grant", d, err)
	}
	if d, err := l.Allow(ctx, "b"); err != nil || d.Allowed {
		t.Fatalf("Allow(b) = %+v, %v; want a denial: b maps to the key a emptied", d, err)
	}
}

func BenchmarkAllow(b *testing.B) {
	st := teststore.Local(b, local.WithSweepInterval(0))
	b.Cleanup(func() { _ = st.Close() })
	l, err := limiter.New(st, algo.TokenBucket{Rate: 1e9, Burst: 1 << 40})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	keys := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	for _, k := range keys {
		_, _ = l.Allow(ctx, k)
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		key := keys[int(next.Add(1))%len(keys)]
		for pb.Next() {
			if _, err := l.Allow(ctx, key); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
