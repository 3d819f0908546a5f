package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/storecheck"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// flakyStore is a local store that can be switched to failing like an unreachable Redis,
// to blocking until the call's context ends, or to failing with another error.
type flakyStore struct {
	store.Store
	down    atomic.Bool
	block   atomic.Bool
	other   atomic.Pointer[error]
	gate    chan struct{} // when non-nil, Apply signals entered and waits for gate
	entered chan struct{}
	applies atomic.Int64
	refunds atomic.Int64
}

var errBoom = errors.New("boom")

func (s *flakyStore) fail(ctx context.Context) error {
	if s.block.Load() {
		<-ctx.Done()
		return ctx.Err()
	}
	if e := s.other.Load(); e != nil {
		return *e
	}
	if s.down.Load() {
		return fmt.Errorf("redis: connection refused: %w", store.ErrUnavailable)
	}
	return nil
}

func (s *flakyStore) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	s.applies.Add(1)
	if s.gate != nil {
		s.entered <- struct{}{}
		<-s.gate
	}
	if err := storecheck.Apply(key, a, req); err != nil {
		return algo.Decision{}, err
	}
	if err := s.fail(ctx); err != nil {
		return algo.Decision{}, err
	}
	return s.Store.Apply(ctx, key, a, req)
}

func (s *flakyStore) Refund(ctx context.Context, key string, a algo.Algorithm, n, at int64) error {
	s.refunds.Add(1)
	if err := s.fail(ctx); err != nil {
		return err
	}
	return s.Store.Refund(ctx, key, a, n, at)
}

// handlerLog records the error handler's calls.
type handlerLog struct {
	mu   sync.Mutex
	errs []error
}

func (h *handlerLog) handle(key string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.errs = append(h.errs, fmt.Errorf("%s: %w", key, err))
}

func (h *handlerLog) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.errs)
}

// newFlaky returns a limiter (TokenBucket 1/s, burst 2) over a flakyStore, with an error
// handler, on one fake clock.
func newFlaky(t *testing.T, opts ...limiter.Option) (*limiter.Limiter, *flakyStore, *handlerLog, *clockx.Fake) {
	t.Helper()
	clk := clockx.NewFake(start)
	st := &flakyStore{Store: teststore.Local(t, local.WithClock(clk), local.WithSweepInterval(0))}
	t.Cleanup(func() { _ = st.Close() })
	h := &handlerLog{}
	opts = append([]limiter.Option{limiter.WithClock(clk), limiter.WithErrorHandler(h.handle)}, opts...)
	l, err := limiter.New(st, algo.TokenBucket{Rate: 1, Burst: 2}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l, st, h, clk
}

func TestFailClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, st, h, clk := newFlaky(t) // FailClosed is the default
	st.down.Store(true)
	if d, err := l.Allow(ctx, "k"); d != (limiter.Decision{}) || !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Allow = %+v, %v; want a zero (denied) Decision and store.ErrUnavailable", d, err)
	}
	if r, err := l.Reserve(ctx, "k", 1, time.Second); r == nil || r.OK() || !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Reserve = %v, %v; want a reservation that is not OK and store.ErrUnavailable", r, err)
	}
	if err := l.Wait(ctx, "k"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Wait = %v; want store.ErrUnavailable", err)
	}
	if ok, err := l.TryAcquire(ctx, "k", 1, time.Second); ok || !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("TryAcquire = %v, %v; want false, store.ErrUnavailable", ok, err)
	}
	if got, want := h.count(), 4; got != want {
		t.Errorf("error handler called %d times, want %d", got, want)
	}
	if !clk.Now().Equal(start) {
		t.Errorf("the clock moved to %v", clk.Now())
	}
	st.down.Store(false)
	if d, err := l.Allow(ctx, "k"); err != nil || !d.Allowed {
		t.Errorf("Allow after recovery = %+v, %v; want allowed", d, err)
	}
}

func TestFailOpen(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, st, h, clk := newFlaky(t, limiter.WithFailurePolicy(limiter.FailOpen))
	st.down.Store(true)
	for i := 0; i < 5; i++ { // more than the burst: nothing limits while the store is down
		if d, err := l.Allow(ctx, "k"); !d.Allowed || !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("Allow = %+v, %v; want allowed with store.ErrUnavailable", d, err)
		}
	}
	r, err := l.Reserve(ctx, "k", 2, time.Second)
	if r == nil || !r.OK() || r.Delay() != 0 || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Reserve = %v, %v; want OK with no delay and store.ErrUnavailable", r, err)
	}
	if err := r.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Cancel(ctx); err != nil || st.refunds.Load() != 0 {
		t.Fatalf("Cancel = %v with %d refunds; want nil and no refund", err, st.refunds.Load())
	}
	if err := l.WaitN(ctx, "k", 2); err != nil {
		t.Fatalf("WaitN = %v, want nil", err)
	}
	if ok, err := l.TryAcquire(ctx, "k", 2, 0); !ok || err != nil {
		t.Fatalf("TryAcquire = %v, %v; want true, nil", ok, err)
	}
	if got, want := h.count(), 8; got != want {
		t.Fatalf("error handler called %d times, want %d", got, want)
	}
	if !clk.Now().Equal(start) {
		t.Fatalf("the clock moved to %v", clk.Now())
	}
}

func TestFallback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, st, h, clk := newFlaky(t)
	fbStore := teststore.Local(t, local.WithClock(clk), local.WithSweepInterval(0))
	t.Cleanup(func() { _ = fbStore.Close() })
	fb, err := limiter.New(fbStore, algo.TokenBucket{Rate: 0.5, Burst: 1}, limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	l2, err := limiter.New(st, algo.TokenBucket{Rate: 1, Burst: 2}, limiter.WithClock(clk),
		limiter.WithFailurePolicy(limiter.Fallback(fb)), limiter.WithErrorHandler(h.handle))
	if err != nil {
		t.Fatal(err)
	}
	st.down.Store(true)
	// The fallback's burst of 1 decides.
	for i, want := range []bool{true, false} {
		d, err := l2.Allow(ctx, "k")
		if d.Allowed != want || d.Limit != 1 || !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "fallback") {
			t.Fatalf("Allow %d = %+v, %v; want Allowed %v from the fallback (Limit 1) and store.ErrUnavailable", i, d, err, want)
		}
	}
	// Wait is handed to the fallback: it sleeps the fallback's 2 s and succeeds.
	if err := l2.Wait(ctx, "k"); err != nil {
		t.Fatalf("Wait = %v, want nil", err)
	}
	if got, want := clk.Now().Sub(start), 2*time.Second; got != want {
		t.Fatalf("Wait slept %v, want %v", got, want)
	}
	if ok, err := l2.TryAcquire(ctx, "k", 1, time.Second); ok || err != nil {
		t.Fatalf("TryAcquire(1s) = %v, %v; want false, nil (the fallback needs 2s)", ok, err)
	}
	if ok, err := l2.TryAcquire(ctx, "k", 2, time.Second); ok || !errors.Is(err, limiter.ErrExceedsLimit) {
		t.Fatalf("TryAcquire(2) = %v, %v; want the fallback's ErrExceedsLimit", ok, err)
	}
	// A reservation from the fallback is cancelled in the fallback's store.
	r, err := l2.Reserve(ctx, "k", 1, time.Hour)
	if !r.OK() || r.Delay() != 2*time.Second || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Reserve = OK %v, Delay %v, %v; want the fallback's 2s reservation", r.OK(), r.Delay(), err)
	}
	if err := r.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if r, _ := l2.Reserve(ctx, "k", 1, time.Hour); r.Delay() != 2*time.Second {
		t.Fatalf("Reserve after Cancel: Delay %v, want 2s (the cancelled permit is back)", r.Delay())
	}
	if got, want := h.count(), 7; got != want {
		t.Fatalf("error handler called %d times, want %d", got, want)
	}
}

func TestPolicyIgnoresInputErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, st, h, clk := newFlaky(t, limiter.WithFailurePolicy(limiter.FailOpen), tripAtOnce)
	st.down.Store(true)
	if d, err := l.AllowN(ctx, "k", 0); d.Allowed || !errors.Is(err, algo.ErrInvalidRequest) {
		t.Errorf("AllowN(0) = %+v, %v; want denied with algo.ErrInvalidRequest", d, err)
	}
	if d, err := l.Allow(ctx, ""); d.Allowed || !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("Allow(\"\") = %+v, %v; want denied with store.ErrInvalidKey", d, err)
	}
	// Other store errors are not unavailability either.
	st.other.Store(&errBoom)
	if d, err := l.Allow(ctx, "k"); d.Allowed || !errors.Is(err, errBoom) {
		t.Errorf("Allow with a store error = %+v, %v; want denied with that error", d, err)
	}
	st.other.Store(nil)
	// A caller's cancelled context is the caller's error.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	st.block.Store(true)
	if d, err := l.Allow(cctx, "k"); d.Allowed || !errors.Is(err, context.Canceled) {
		t.Errorf("Allow with a cancelled context = %+v, %v; want denied with context.Canceled", d, err)
	}
	if got := h.count(); got != 0 {
		t.Errorf("error handler called %d times, want 0", got)
	}
	// None of these counted for the breaker: the next failure is the first, and it opens it.
	st.block.Store(false)
	clk.Add(time.Nanosecond)
	if _, err := l.Allow(ctx, "k"); !errors.Is(err, store.ErrUnavailable) || errors.Is(err, limiter.ErrCircuitOpen) {
		t.Errorf("Allow after errors that are not the store's = %v; want the store's failure", err)
	}
	clk.Add(time.Nanosecond)
	if _, err := l.Allow(ctx, ""); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("Allow(\"\") with the breaker open = %v; want store.ErrInvalidKey", err)
	}
	if _, err := l.Allow(ctx, "k"); !errors.Is(err, limiter.ErrCircuitOpen) {
		t.Errorf("Allow after one failure = %v; want ErrCircuitOpen", err)
	}
}

func TestTimeout(t *testing.T) {
	t.Parallel()
	l, st, h, _ := newFlaky(t, limiter.WithFailurePolicy(limiter.FailOpen), limiter.WithTimeout(10*time.Millisecond))
	st.block.Store(true)
	d, err := l.Allow(context.Background(), "k")
	if !d.Allowed || !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Allow on a hung store = %+v, %v; want allowed with store.ErrUnavailable and DeadlineExceeded", d, err)
	}
	if got := h.count(); got != 1 {
		t.Fatalf("error handler called %d times, want 1", got)
	}
	st.block.Store(false)
	if d, err := l.Allow(context.Background(), "k"); !d.Allowed || err != nil {
		t.Fatalf("Allow on a healthy store = %+v, %v", d, err)
	}
}

// sleepHook is a fake clock that runs f before each Sleep.
type sleepHook struct {
	*clockx.Fake
	f func()
}

func (c sleepHook) Sleep(ctx context.Context, d time.Duration) error {
	c.f()
	return c.Fake.Sleep(ctx, d)
}

// TestFallbackWaitAsksStoreAgain: a Fallback decides each try of WaitN as the limiter's
// own answer, so a WaitN the fallback denies sleeps and then asks the store first again:
// once the store is back, it is the store that grants.
func TestFallbackWaitAsksStoreAgain(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clockx.NewFake(start)
	st := &flakyStore{Store: teststore.Local(t, local.WithClock(clk), local.WithSweepInterval(0))}
	t.Cleanup(func() { _ = st.Close() })
	hook := sleepHook{Fake: clk, f: func() { st.down.Store(false) }}
	fbStore := teststore.Local(t, local.WithClock(clk), local.WithSweepInterval(0))
	t.Cleanup(func() { _ = fbStore.Close() })
	// A full LeakyBucket queue denies even a WaitN without deadline: it sleeps and tries again.
	fb, err := limiter.New(fbStore, algo.LeakyBucket{Rate: 1, Capacity: 1}, limiter.WithClock(hook))
	if err != nil {
		t.Fatal(err)
	}
	l, err := limiter.New(st, algo.TokenBucket{Rate: 1, Burst: 2}, limiter.WithClock(hook),
		limiter.WithFailurePolicy(limiter.Fallback(fb)), limiter.WithCircuitBreaker(limiter.CircuitBreaker{Off: true}))
	if err != nil {
		t.Fatal(err)
	}
	st.down.Store(true)
	if d, _ := l.Allow(ctx, "k"); !d.Allowed {
		t.Fatalf("Allow = %+v; want the fallback's grant, filling its queue", d)
	}
	before := st.applies.Load()
	if err := l.Wait(ctx, "k"); err != nil {
		t.Fatalf("Wait = %v, want nil", err)
	}
	if got := st.applies.Load() - before; got != 2 {
		t.Fatalf("Wait asked the store %d times, want 2: down, then (after the fallback's denial and a sleep) up", got)
	}
}
