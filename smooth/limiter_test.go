package smooth_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/smooth"
	"github.com/ratekit/limiter/store"
)

// The waits themselves are checked against Guava by golden_test.go; these tests cover the
// Go API around them: arguments, options, contexts, concurrency and shared keys.

func TestSmoothConstructorsRejectBadArguments(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(epoch)
	inf, nan := math.Inf(1), math.NaN()
	cases := []struct {
		name string
		make func() (*smooth.Limiter, error)
		want error // nil: valid
	}{
		{"bursty", func() (*smooth.Limiter, error) { return smooth.New(algo.SmoothBursty{Rate: 5}) }, nil},
		{"bursty +Inf", func() (*smooth.Limiter, error) { return smooth.New(algo.SmoothBursty{Rate: inf}) }, nil},
		{"bursty tiny", func() (*smooth.Limiter, error) { return smooth.New(algo.SmoothBursty{Rate: 1e-15}) }, nil},
		{"bursty 0", func() (*smooth.Limiter, error) { return smooth.New(algo.SmoothBursty{Rate: 0}) }, algo.ErrInvalidConfig},
		{"bursty negative", func() (*smooth.Limiter, error) { return smooth.New(algo.SmoothBursty{Rate: -1}) }, algo.ErrInvalidConfig},
		{"bursty NaN", func() (*smooth.Limiter, error) { return smooth.New(algo.SmoothBursty{Rate: nan}) }, algo.ErrInvalidConfig},
		{"bursty -Inf", func() (*smooth.Limiter, error) { return smooth.New(algo.SmoothBursty{Rate: -inf}) }, algo.ErrInvalidConfig},
		{"bursty max burst", func() (*smooth.Limiter, error) { return smooth.New(algo.SmoothBursty{Rate: 5, MaxBurstSeconds: 2}) }, nil},
		{"bursty max burst 0 (1)", func() (*smooth.Limiter, error) { return smooth.New(algo.SmoothBursty{Rate: 5, MaxBurstSeconds: 0}) }, nil},
		{"bursty max burst < 0", func() (*smooth.Limiter, error) { return smooth.New(algo.SmoothBursty{Rate: 5, MaxBurstSeconds: -1}) }, algo.ErrInvalidConfig},
		{"token bucket", func() (*smooth.Limiter, error) { return smooth.New(algo.TokenBucket{Rate: 5, Burst: 5}) }, algo.ErrInvalidConfig},
		{"named", func() (*smooth.Limiter, error) { return smooth.New(algo.Named(algo.SmoothBursty{Rate: 5}, "n")) }, algo.ErrInvalidConfig},
		{"nil algorithm", func() (*smooth.Limiter, error) { return smooth.New(nil) }, algo.ErrInvalidConfig},
		{"warmup", func() (*smooth.Limiter, error) { return smooth.New(algo.SmoothWarmingUp{Rate: 5, Warmup: time.Second}) }, nil},
		{"warmup 0", func() (*smooth.Limiter, error) { return smooth.New(algo.SmoothWarmingUp{Rate: 5, Warmup: 0}) }, nil},
		{"warmup +Inf", func() (*smooth.Limiter, error) {
			return smooth.New(algo.SmoothWarmingUp{Rate: inf, Warmup: time.Second})
		}, nil},
		{"warmup rate 0", func() (*smooth.Limiter, error) { return smooth.New(algo.SmoothWarmingUp{Rate: 0, Warmup: time.Second}) }, algo.ErrInvalidConfig},
		{"warmup NaN", func() (*smooth.Limiter, error) {
			return smooth.New(algo.SmoothWarmingUp{Rate: nan, Warmup: time.Second})
		}, algo.ErrInvalidConfig},
		{"warmup negative", func() (*smooth.Limiter, error) {
			return smooth.New(algo.SmoothWarmingUp{Rate: 5, Warmup: -time.Nanosecond})
		}, algo.ErrInvalidConfig},
		{"warmup cold factor 1", func() (*smooth.Limiter, error) {
			return smooth.New(algo.SmoothWarmingUp{Rate: 5, Warmup: time.Second, ColdFactor: 1})
		}, nil},
		{"warmup cold factor < 1", func() (*smooth.Limiter, error) {
			return smooth.New(algo.SmoothWarmingUp{Rate: 5, Warmup: time.Second, ColdFactor: 0.9})
		}, algo.ErrInvalidConfig},
		{"warmup cold factor 0 (3)", func() (*smooth.Limiter, error) {
			return smooth.New(algo.SmoothWarmingUp{Rate: 5, Warmup: time.Second, ColdFactor: 0})
		}, nil},
		{"warmup cold factor NaN", func() (*smooth.Limiter, error) {
			return smooth.New(algo.SmoothWarmingUp{Rate: 5, Warmup: time.Second, ColdFactor: nan})
		}, algo.ErrInvalidConfig},
		{"nil store", func() (*smooth.Limiter, error) {
			return smooth.New(algo.SmoothBursty{Rate: 5}, smooth.WithStore(nil, "k"))
		}, algo.ErrInvalidConfig},
		{"empty key", func() (*smooth.Limiter, error) {
			return smooth.New(algo.SmoothBursty{Rate: 5}, smooth.WithStore(teststore.Local(t, local.WithClock(clk)), ""))
		}, store.ErrInvalidKey},
		{"typed nil store", func() (*smooth.Limiter, error) {
			return smooth.New(algo.SmoothBursty{Rate: 5}, smooth.WithStore((*local.Store)(nil), "k"))
		}, algo.ErrInvalidConfig},
		{"empty key is a config error too", func() (*smooth.Limiter, error) {
			return smooth.New(algo.SmoothWarmingUp{Rate: 5, Warmup: time.Second}, smooth.WithStore(teststore.Local(t, local.WithClock(clk)), ""))
		}, algo.ErrInvalidConfig},
		{"nil clock", func() (*smooth.Limiter, error) { return smooth.New(algo.SmoothBursty{Rate: 5}, smooth.WithClock(nil)) }, algo.ErrInvalidConfig},
		{"warmup nil clock", func() (*smooth.Limiter, error) {
			return smooth.New(algo.SmoothWarmingUp{Rate: 5, Warmup: time.Second}, smooth.WithClock(nil))
		}, algo.ErrInvalidConfig},
		{"nil options", func() (*smooth.Limiter, error) {
			return smooth.New(algo.SmoothBursty{Rate: 5}, nil, smooth.WithClock(clk), nil)
		}, nil},
	}
	for _, c := range cases {
		l, err := c.make()
		switch {
		case c.want == nil && (err != nil || l == nil):
			t.Errorf("%s: %v, want a limiter", c.name, err)
		case c.want != nil && (!errors.Is(err, c.want) || l != nil):
			t.Errorf("%s: (%v, %v), want an error wrapping %v", c.name, l, err, c.want)
		}
	}
}

func TestSmoothBadRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clockx.NewFake(epoch)
	l, err := smooth.New(algo.SmoothBursty{Rate: 5}, smooth.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{0, -1, math.MinInt64, 1<<53 + 1, math.MaxInt64} {
		if _, err := l.Acquire(ctx, n); !errors.Is(err, algo.ErrInvalidRequest) {
			t.Errorf("Acquire(%d) = %v, want ErrInvalidRequest", n, err)
		}
		if ok, err := l.TryAcquire(ctx, n, time.Second); ok || !errors.Is(err, algo.ErrInvalidRequest) {
			t.Errorf("TryAcquire(%d) = %v, %v, want ErrInvalidRequest", n, ok, err)
		}
	}
	// Nothing was taken: the first acquire is still free, the second waits 200 ms.
	for _, want := range []time.Duration{0, 200 * time.Millisecond} {
		if got, err := l.Acquire(ctx, 1); err != nil || got != want {
			t.Fatalf("Acquire = %v, %v; want %v", got, err, want)
		}
	}
	// SetRate: bad rates are rejected and leave the rate as it was.
	for _, r := range []float64{0, -5, math.NaN(), math.Inf(-1), 1e16} {
		if err := l.SetRate(r); !errors.Is(err, algo.ErrInvalidConfig) || l.Rate() != 5 {
			t.Errorf("SetRate(%v) = %v, Rate() = %v; want ErrInvalidConfig and 5", r, err, l.Rate())
		}
	}
	if err := l.SetRate(math.Inf(1)); err != nil || !math.IsInf(l.Rate(), 1) {
		t.Errorf("SetRate(+Inf) = %v, Rate() = %v", err, l.Rate())
	}
}

func TestSmoothTinyRateWaitTooLong(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, err := smooth.New(algo.SmoothBursty{Rate: 1e-15}, smooth.WithClock(clockx.NewFake(epoch)))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := l.Acquire(ctx, 1); got != 0 || err != nil {
		t.Fatalf("first Acquire = %v, %v; want free", got, err)
	}
	// The next permit is 31.7 million years away: Guava would block; Acquire says so.
	if _, err := l.Acquire(ctx, 1); !errors.Is(err, limiter.ErrExceedsLimit) {
		t.Errorf("second Acquire = %v, want limiter.ErrExceedsLimit", err)
	}
	if ok, err := l.TryAcquire(ctx, 1, time.Duration(math.MaxInt64)); ok || err != nil {
		t.Errorf("TryAcquire(max timeout) = %v, %v; want false", ok, err)
	}
}

// blockingClock is a clock whose Sleep reports that it started, then blocks until its
// context ends: it lets a test cancel a caller in the middle of its sleep, deterministically.
type blockingClock struct {
	now      time.Time
	sleeping chan time.Duration
}

func (c *blockingClock) Now() time.Time { return c.now }

func (c *blockingClock) Sleep(ctx context.Context, d time.Duration) error {
	c.sleeping <- d
	<-ctx.Done()
	return ctx.Err()
}

func TestSmoothContextCancellation(t *testing.T) {
	t.Parallel()
	clk := &blockingClock{now: epoch, sleeping: make(chan time.Duration, 1)}
	l, err := smooth.New(algo.SmoothBursty{Rate: 5}, smooth.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	// A context already done: nothing is reserved.
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Acquire(done, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire(done ctx) = %v", err)
	}
	if ok, err := l.TryAcquire(done, 1, time.Hour); ok || !errors.Is(err, context.Canceled) {
		t.Fatalf("TryAcquire(done ctx) = %v, %v", ok, err)
	}
	ctx := context.Background()
	if got, err := l.Acquire(ctx, 1); got != 0 || err != nil { // free: no sleep
		t.Fatalf("first Acquire = %v, %v", got, err)
	}
	// Cancelled during its 200 ms sleep: ctx.Err(), and the permit stays taken.
	for _, try := range []bool{false, true} {
		cctx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() {
			if try {
				ok, err := l.TryAcquire(cctx, 1, time.Hour)
				if ok {
					err = errors.New("TryAcquire returned true")
				}
				errc <- err
				return
			}
			_, err := l.Acquire(cctx, 1)
			errc <- err
		}()
		d := <-clk.sleeping
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("try=%v: cancelled during its sleep of %v: %v, want context.Canceled", try, d, err)
		}
		if want := 200 * time.Millisecond; !try && d != want || try && d != 2*want {
			t.Errorf("try=%v: slept %v", try, d)
		}
	}
	// Both cancelled reservations kept their permits: the next one waits 600 ms.
	if ok, err := l.TryAcquire(ctx, 1, 599*time.Millisecond); ok || err != nil {
		t.Errorf("TryAcquire(599ms) = %v, %v; want false (the cancelled permits stay taken)", ok, err)
	}
}

// recordingClock never moves: Sleep records the durations and returns at once, so
// concurrent callers all reserve at one instant.
type recordingClock struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

func (c *recordingClock) Now() time.Time { return c.now }
func (c *recordingClock) Sleep(_ context.Context, d time.Duration) error {
	c.mu.Lock()
	c.slept = append(c.slept, d)
	c.mu.Unlock()
	return nil
}

func TestSmoothConcurrentAcquiresAreSerialized(t *testing.T) {
	t.Parallel()
	clk := &recordingClock{now: epoch}
	l, err := smooth.New(algo.SmoothBursty{Rate: 5}, smooth.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	const callers = 40
	waits := make([]time.Duration, callers)
	var wg sync.WaitGroup
	for i := range waits {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%10 == 0 {
				_ = l.SetRate(5) // same rate: no change, but takes the write lock
			}
			w, err := l.Acquire(context.Background(), 1)
			if err != nil {
				t.Error(err)
			}
			waits[i] = w
		}()
	}
	wg.Wait()
	// At one instant, 40 reservations are queued one interval apart: 0, 200 ms, ... 7.8 s.
	slices.Sort(waits)
	for i, w := range waits {
		if want := time.Duration(i) * 200 * time.Millisecond; w != want {
			t.Fatalf("waits %v: #%d is %v, want %v", waits, i, w, want)
		}
	}
	if len(clk.slept) != callers-1 { // the free one does not sleep
		t.Errorf("%d sleeps, want %d", len(clk.slept), callers-1)
	}
}

func TestSmoothConcurrentTryAcquireAdmitsExactlyTheBurst(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(epoch)
	l, err := smooth.New(algo.SmoothBursty{Rate: 5}, smooth.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	clk.Add(2 * time.Second) // 5 permits stored (maxPermits)
	var granted sync.WaitGroup
	var mu sync.Mutex
	count := 0
	for i := 0; i < 64; i++ {
		granted.Add(1)
		go func() {
			defer granted.Done()
			ok, err := l.TryAcquire(context.Background(), 1, 0)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				count++
				mu.Unlock()
			}
		}()
	}
	granted.Wait()
	// 5 stored permits, then one fresh permit (free, as every first request is), then none.
	if count != 6 {
		t.Errorf("%d granted, want 6", count)
	}
}

func TestSmoothLimitersSharingAKeyArePacedAsOne(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clockx.NewFake(epoch)
	st := teststore.Local(t, local.WithClock(clk))
	t.Cleanup(func() { _ = st.Close() })
	var ls []*smooth.Limiter
	for i := 0; i < 3; i++ {
		l, err := smooth.New(algo.SmoothBursty{Rate: 10}, smooth.WithClock(clk), smooth.WithStore(st, "shared"))
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	// Round robin over three limiters: the waits of a single limiter of 10/s.
	for i := 0; i < 9; i++ {
		want := 100 * time.Millisecond
		if i == 0 {
			want = 0
		}
		if got, err := ls[i%3].Acquire(ctx, 1); err != nil || got != want {
			t.Fatalf("acquire %d on limiter %d: %v, %v; want %v", i, i%3, got, err, want)
		}
	}
	// A key of another name is independent.
	other, _ := smooth.New(algo.SmoothBursty{Rate: 10}, smooth.WithClock(clk), smooth.WithStore(st, "other"))
	if got, err := other.Acquire(ctx, 1); err != nil || got != 0 {
		t.Errorf("another key: %v, %v; want free", got, err)
	}
}

// failingStore is a store that is down.
type failingStore struct{ store.Store }

var errDown = errors.New("store down")

func (failingStore) Apply(context.Context, string, algo.Algorithm, algo.Request) (algo.Decision, error) {
	return algo.Decision{}, errDown
}

func TestSmoothStoreFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A store that is down at construction does not prevent it (the state then starts at
	// the first acquire); its errors are returned by the calls that need it.
	l, err := smooth.New(algo.SmoothBursty{Rate: 5}, smooth.WithStore(failingStore{}, "k"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, 1); !errors.Is(err, errDown) {
		t.Errorf("Acquire = %v, want the store's error", err)
	}
	if ok, err := l.TryAcquire(ctx, 1, 0); ok || !errors.Is(err, errDown) {
		t.Errorf("TryAcquire = %v, %v; want the store's error", ok, err)
	}
	if err := l.SetRate(7); !errors.Is(err, errDown) || l.Rate() != 7 {
		t.Errorf("SetRate = %v, Rate %v: want the store's error, and the new rate kept", err, l.Rate())
	}
}
