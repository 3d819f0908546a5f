package limiter_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	require.NoError(tb, err)
	return l, clk
}

func allowN(tb testing.TB, l *limiter.Limiter, key string, n int64) limiter.Decision {
	tb.Helper()
	d, err := l.AllowN(context.Background(), key, n)
	require.NoError(tb, err, "AllowN(%q, %d)", key, n)
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
					require.NoError(tb, err)
					ds[j] = r.Decision()
				}
				a, b := ds[0], ds[1]
				require.Equal(tb, [3]any{a.Allowed, a.Wait, a.RetryAfter}, [3]any{b.Allowed, b.Wait, b.RetryAfter},
					"step %d maxWait %v: key %q got %+v, key %q got %+v", i, maxWait, p[0], a, p[1], b)
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
				require.NoError(t, err)
				require.True(t, d.Allowed, "request %d: %+v", i, d)
				require.Equal(t, [3]any{int64(4), 3 - i, time.Duration(0)}, [3]any{d.Limit, d.Remaining, d.Wait},
					"request %d: Limit, Remaining, Wait of %+v", i, d)
			}
			d := allowN(t, l, "k", 1)
			require.False(t, d.Allowed, "fifth request: %+v", d)
			require.Positive(t, d.RetryAfter, "fifth request: %+v", d)
			require.NotEqual(t, algo.Never, d.RetryAfter, "fifth request: %+v, want a finite RetryAfter", d)
			clk.Add(d.RetryAfter - time.Microsecond)
			assert.False(t, allowN(t, l, "k", 1).Allowed, "1µs before RetryAfter")
			clk.Add(time.Microsecond)
			assert.True(t, allowN(t, l, "k", 1).Allowed, "at RetryAfter")
			d = allowN(t, l, "other", 4)
			assert.True(t, d.Allowed, "AllowN(4) on a fresh key: %+v", d)
			assert.Zero(t, d.Remaining, "AllowN(4) on a fresh key: %+v", d)
			d = allowN(t, l, "other2", 5)
			assert.False(t, d.Allowed, "AllowN(5) over a limit of 4: %+v", d)
			assert.Equal(t, algo.Never, d.RetryAfter, "AllowN(5) over a limit of 4: %+v", d)
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
			require.NoError(t, err)
			require.True(t, r.OK(), "Reserve: %+v", r.Decision())
			require.Positive(t, r.Delay())
			require.Equal(t, r.Decision().Wait, r.Delay(), "Delay = Wait")
			require.NoError(t, r.Cancel(ctx))
			// Cancel twice gives back once.
			for k, cancels := range map[string]int{"twice": 2, "twice-control": 1} {
				r, err := l.Reserve(ctx, k, 1, algo.Forever)
				require.NoError(t, err)
				for i := 0; i < cancels; i++ {
					require.NoError(t, r.Cancel(ctx))
				}
			}
			// Reserved and waited for: the permits stay taken, and Cancel after the
			// reservation's time has come does nothing.
			before := clk.Now()
			rw, err := l.Reserve(ctx, "waited", 1, algo.Forever)
			require.NoError(t, err)
			rl, err := l.Reserve(ctx, "late", 1, algo.Forever)
			require.NoError(t, err)
			delay := rw.Delay()
			require.NoError(t, rw.Wait(ctx))
			require.Equal(t, delay, clk.Now().Sub(before), "Wait slept its Delay")
			require.Zero(t, rw.Delay(), "Delay after Wait")
			require.NoError(t, rl.Cancel(ctx))
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
	require.NoError(t, err)
	retry := r.Decision().RetryAfter
	require.False(t, r.OK(), "Reserve: %+v", r.Decision())
	require.Equal(t, algo.Never, r.Delay(), "Delay of a denied Reservation")
	require.Positive(t, retry)
	require.NotEqual(t, algo.Never, retry, "a finite RetryAfter")
	require.ErrorIs(t, r.Wait(ctx), algo.ErrInvalidRequest, "Wait on a denied reservation")
	require.NoError(t, r.Cancel(ctx))
	clk.Add(retry)
	r, err = l.Reserve(ctx, "k", 2, 999*time.Millisecond)
	require.NoError(t, err)
	require.True(t, r.OK(), "Reserve after RetryAfter")
	require.Equal(t, 999*time.Millisecond, r.Delay(), "Reserve after RetryAfter")
	clk.Set(start)
	r, err = l.Reserve(ctx, "k3", 3, algo.Forever)
	require.NoError(t, err)
	require.False(t, r.OK(), "Reserve(3) over a burst of 2")
	require.ErrorIs(t, r.Wait(ctx), limiter.ErrExceedsLimit, "Reserve(3) over a burst of 2")
	// A negative maxWait is 0: denied now, granted once the tokens are back.
	allowN(t, l, "k4", 2)
	r, err = l.Reserve(ctx, "k4", 1, -time.Hour)
	require.NoError(t, err)
	require.False(t, r.OK(), "Reserve with a negative maxWait reserved a future permit")
	clk.Add(500 * time.Millisecond)
	r, err = l.Reserve(ctx, "k4", 1, -time.Hour)
	require.NoError(t, err)
	require.True(t, r.OK(), "Reserve with a permit available")
	require.Zero(t, r.Delay(), "Reserve with a permit available")
}

func TestSetAlgorithm(t *testing.T) {
	t.Parallel()
	l, clk := newTest(t, algo.TokenBucket{Rate: 4, Burst: 4})
	allowN(t, l, "k", 4)
	faster := algo.TokenBucket{Rate: 8, Burst: 4}
	require.NoError(t, l.SetAlgorithm(faster))
	require.Equal(t, algo.Algorithm(faster), l.Algorithm())
	// Same slot: the bucket is still empty, and refills at the lower rate, 4/s, until its
	// next write (the store cannot know when the rate changed); then at 8/s.
	d := allowN(t, l, "k", 1)
	require.False(t, d.Allowed, "after SetAlgorithm: %+v", d)
	require.Equal(t, 250*time.Millisecond, d.RetryAfter, "after SetAlgorithm: %+v", d)
	clk.Add(250 * time.Millisecond)
	require.True(t, allowN(t, l, "k", 1).Allowed, "250ms later")
	clk.Add(125 * time.Millisecond)
	require.True(t, allowN(t, l, "k", 1).Allowed, "125ms after that, at 8/s")
	// Another slot: fresh state.
	require.NoError(t, l.SetAlgorithm(algo.GCRA{Rate: 1, Burst: 2}))
	require.True(t, allowN(t, l, "k", 2).Allowed, "GCRA on a key only a token bucket had used")
	// Invalid: refused, the algorithm is unchanged.
	err := l.SetAlgorithm(algo.GCRA{Rate: -1, Burst: 2})
	require.ErrorIs(t, err, algo.ErrInvalidConfig)
	require.ErrorContains(t, err, "GCRA.Rate")
	require.ErrorIs(t, l.SetAlgorithm(nil), algo.ErrInvalidConfig)
	require.Equal(t, algo.Algorithm(algo.GCRA{Rate: 1, Burst: 2}), l.Algorithm(), "Algorithm() after a failed SetAlgorithm")
}

func TestConcurrentAllowNeverOverAdmits(t *testing.T) {
	t.Parallel()
	l, _ := newTest(t, algo.TokenBucket{Rate: 1, Burst: 100})
	require.Equal(t, int64(100), allowConcurrently(t, l, "shared", 8, 50),
		"grants of 400 concurrent requests with the clock standing still")
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
	require.Zero(t, testing.AllocsPerRun(1000, func() { _, _ = l.Allow(ctx, "k") }), "allocations of Allow on an existing key")
}

// TestAllowKeyFunc checks that Allow limits the key WithKeyFunc makes of the key it is
// given.
func TestAllowKeyFunc(t *testing.T) {
	l, _ := newTest(t, algo.TokenBucket{Rate: 1, Burst: 1}, limiter.WithKeyFunc(func(string) string { return "shared" }))
	ctx := context.Background()
	d, err := l.Allow(ctx, "a")
	require.NoError(t, err)
	require.True(t, d.Allowed, "Allow(a)")
	d, err = l.Allow(ctx, "b")
	require.NoError(t, err)
	require.False(t, d.Allowed, "Allow(b): b maps to the key a emptied")
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

// TestLimiterString: a Limiter prints as its algorithm, a composite as its rules, so that
// TraceRules and messages show a rule rather than a pointer.
func TestLimiterString(t *testing.T) {
	a, _ := newTest(t, algo.TokenBucket{Rate: 10, Burst: 20})
	b, _ := newTest(t, algo.FixedWindow{Limit: 100, Window: time.Minute})
	all, err := limiter.All(a, b)
	require.NoError(t, err)
	assert.Equal(t, "token-bucket(rate=10/s, burst=20)", a.String())
	assert.Equal(t, "all("+a.String()+", "+b.String()+")", all.String())
	assert.Equal(t, "limiter(unmade)", (*limiter.Limiter)(nil).String())
	assert.Equal(t, a.String(), fmt.Sprint(a))
}
