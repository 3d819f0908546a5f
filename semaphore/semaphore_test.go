package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/semaphore"
	"github.com/ratekit/limiter/store"
)

var semStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// semStore wraps a SemaphoreStore, counting calls and reporting each Acquire answer.
type semStore struct {
	store.SemaphoreStore
	acquires, releases, renews atomic.Int64          // renews counts completed calls
	fail                       atomic.Pointer[error] // when set, every call fails with it
	answers                    chan semAnswer        // nil: not reported
}

type semAnswer struct {
	token string
	r     algo.SemaphoreResult
}

func (s *semStore) err() error {
	if p := s.fail.Load(); p != nil {
		return *p
	}
	return nil
}

func (s *semStore) Acquire(ctx context.Context, name string, cfg algo.Semaphore, token string, q time.Duration) (algo.SemaphoreResult, error) {
	s.acquires.Add(1)
	if err := s.err(); err != nil {
		return algo.SemaphoreResult{}, err
	}
	r, err := s.SemaphoreStore.Acquire(ctx, name, cfg, token, q)
	if s.answers != nil && err == nil {
		select {
		case s.answers <- semAnswer{token, r}:
		default: // nobody is listening any more
		}
	}
	return r, err
}

func (s *semStore) Release(ctx context.Context, name, token string) (bool, error) {
	s.releases.Add(1)
	if err := s.err(); err != nil {
		return false, err
	}
	return s.SemaphoreStore.Release(ctx, name, token)
}

func (s *semStore) Renew(ctx context.Context, name string, cfg algo.Semaphore, token string) (bool, error) {
	if err := s.err(); err != nil {
		s.renews.Add(1)
		return false, err
	}
	ok, err := s.SemaphoreStore.Renew(ctx, name, cfg, token)
	s.renews.Add(1)
	return ok, err
}

// newLocalSem returns a local store on storeClock, wrapped, and a Semaphore sleeping on
// semClock.
func newLocalSem(t *testing.T, cfg algo.Semaphore, storeClock, semClock clockx.Clock, opts ...semaphore.Option) (*semaphore.Semaphore, *semStore) {
	t.Helper()
	ls := teststore.Local(t, local.WithClock(storeClock), local.WithSweepInterval(0))
	t.Cleanup(func() { _ = ls.Close() })
	ws := &semStore{SemaphoreStore: ls}
	sem, err := semaphore.New(ws, cfg, append([]semaphore.Option{semaphore.WithClock(semClock)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return sem, ws
}

func TestNewInvalid(t *testing.T) {
	t.Parallel()
	st := teststore.Local(t, local.WithSweepInterval(0))
	t.Cleanup(func() { _ = st.Close() })
	good := algo.Semaphore{Permits: 1, LeaseTTL: time.Second}
	for _, tc := range []struct {
		s    store.SemaphoreStore
		cfg  algo.Semaphore
		opts []semaphore.Option
		want string
	}{
		{nil, good, nil, "store is nil"},
		{st, algo.Semaphore{LeaseTTL: time.Second}, nil, "Semaphore.Permits"},
		{st, algo.Semaphore{Permits: 1}, nil, "Semaphore.LeaseTTL"},
		{st, good, []semaphore.Option{semaphore.WithPoll(0)}, "semaphore.WithPoll"},
		{st, good, []semaphore.Option{semaphore.WithPoll(-time.Second)}, "semaphore.WithPoll"},
		{(*local.Store)(nil), good, nil, "store is nil"},
		{st, good, []semaphore.Option{semaphore.WithClock(nil)}, "semaphore.WithClock"},
	} {
		_, err := semaphore.New(tc.s, tc.cfg, tc.opts...)
		if !errors.Is(err, algo.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("semaphore.New(%v, %+v) = %v, want ErrInvalidConfig naming %s", tc.s, tc.cfg, err, tc.want)
		}
	}
	if _, err := semaphore.New(st, good, nil, semaphore.WithPoll(time.Second), nil); err != nil {
		t.Errorf("nil options: %v", err)
	}
}

func TestSemaphoreTryAcquireRelease(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(semStart)
	sem, ws := newLocalSem(t, algo.Semaphore{Permits: 2, LeaseTTL: 10 * time.Second}, clk, clk)
	ctx := context.Background()
	try := func(want bool) *semaphore.Lease {
		t.Helper()
		l, ok, err := sem.TryAcquire(ctx, "jobs")
		if err != nil || ok != want || (l != nil) != want {
			t.Fatalf("TryAcquire = %v, %v, %v; want ok %v", l, ok, err, want)
		}
		return l
	}
	a, b := try(true), try(true)
	try(false)
	if a.Token() == b.Token() || len(a.Token()) != 32 {
		t.Fatalf("tokens %q and %q: want two distinct 128-bit hex tokens", a.Token(), b.Token())
	}
	if n, err := ws.Holders(ctx, "jobs"); n != 2 || err != nil {
		t.Fatalf("Holders = %d, %v; want 2", n, err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	calls := ws.releases.Load()
	if err := a.Release(ctx); err != nil {
		t.Fatalf("second Release: %v, want nil", err)
	}
	if got := ws.releases.Load(); got != calls {
		t.Fatalf("a second Release called the store again")
	}
	if err := a.Renew(ctx); !errors.Is(err, semaphore.ErrLeaseExpired) {
		t.Fatalf("Renew after Release: %v, want ErrLeaseExpired", err)
	}
	try(true)
}

func TestSemaphoreExpiredLease(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(semStart)
	sem, st := newLocalSem(t, algo.Semaphore{Permits: 1, LeaseTTL: 10 * time.Second}, clk, clk)
	ctx := context.Background()
	l, ok, err := sem.TryAcquire(ctx, "jobs")
	if !ok || err != nil {
		t.Fatalf("TryAcquire = %v, %v", ok, err)
	}
	clk.Add(10 * time.Second)
	if err := l.Renew(ctx); !errors.Is(err, semaphore.ErrLeaseExpired) {
		t.Fatalf("Renew of an expired lease: %v, want ErrLeaseExpired", err)
	}
	other, ok, err := sem.TryAcquire(ctx, "jobs")
	if !ok || err != nil {
		t.Fatalf("TryAcquire after expiry = %v, %v; want granted", ok, err)
	}
	for i := 0; i < 2; i++ {
		if err := l.Release(ctx); !errors.Is(err, semaphore.ErrLeaseExpired) {
			t.Fatalf("Release %d of an expired lease: %v, want ErrLeaseExpired", i, err)
		}
	}
	// The expired lease's release changed nothing: the new holder still holds.
	if n, err := st.Holders(ctx, "jobs"); n != 1 || err != nil {
		t.Fatalf("Holders = %d, %v; want 1", n, err)
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestSemaphoreRenewKeepsHolder(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(semStart)
	sem, _ := newLocalSem(t, algo.Semaphore{Permits: 1, LeaseTTL: 10 * time.Second}, clk, clk)
	ctx := context.Background()
	l, _, _ := sem.TryAcquire(ctx, "jobs")
	for i := 0; i < 20; i++ { // 180 s, eighteen times the lease
		clk.Add(9 * time.Second)
		if err := l.Renew(ctx); err != nil {
			t.Fatalf("Renew %d: %v", i, err)
		}
		if _, ok, _ := sem.TryAcquire(ctx, "jobs"); ok {
			t.Fatalf("a second holder got in after %d renewals", i)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// recordingClock is a Fake whose sleeps are recorded.
type recordingClock struct {
	*clockx.Fake
	mu     sync.Mutex
	sleeps []time.Duration
}

func (c *recordingClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.mu.Unlock()
	return c.Fake.Sleep(ctx, d)
}

// TestSemaphoreAcquireBacksOff checks the polling of a blocked Acquire: waits that double
// from 1 ms up to the cap, the last one cut to the moment the holder's lease expires, and
// the grant exactly then.
func TestSemaphoreAcquireBacksOff(t *testing.T) {
	t.Parallel()
	clk := &recordingClock{Fake: clockx.NewFake(semStart)}
	sem, ws := newLocalSem(t, algo.Semaphore{Permits: 1, LeaseTTL: time.Second}, clk, clk)
	ctx := context.Background()
	if _, ok, err := sem.TryAcquire(ctx, "jobs"); !ok || err != nil {
		t.Fatalf("TryAcquire = %v, %v", ok, err) // held and never released
	}
	l, err := sem.Acquire(ctx, "jobs")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := clk.Now(), semStart.Add(time.Second); !got.Equal(want) {
		t.Errorf("granted at %v, want %v (when the holder's lease expired)", got, want)
	}
	ms := time.Millisecond
	want := []time.Duration{ms, 2 * ms, 4 * ms, 8 * ms, 16 * ms, 32 * ms, 64 * ms}
	for range 8 {
		want = append(want, 100*ms)
	}
	want = append(want, 73*ms) // 127 ms + 800 ms + 73 ms = 1 s
	if got := fmt.Sprint(clk.sleeps); got != fmt.Sprint(want) {
		t.Errorf("sleeps %v\nwant   %v", got, want)
	}
	if got, want := ws.acquires.Load(), int64(1+len(want)+1); got != want {
		t.Errorf("%d store calls, want %d", got, want)
	}
	_ = l.Release(ctx)
}

// cancelAfter is a Fake clock that cancels a context at its n-th sleep.
type cancelAfter struct {
	*clockx.Fake
	n      atomic.Int64
	cancel context.CancelFunc
}

func (c *cancelAfter) Sleep(ctx context.Context, d time.Duration) error {
	if c.n.Add(-1) == 0 {
		c.cancel()
	}
	return c.Fake.Sleep(ctx, d)
}

// TestSemaphoreAcquireCancelled checks that a waiter whose context ends returns its error
// and gives up its place: in fair mode a released permit then goes to the next comer.
func TestSemaphoreAcquireCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	storeClk := clockx.NewFake(semStart) // frozen: no lease or place expires by itself
	clk := &cancelAfter{Fake: clockx.NewFake(semStart), cancel: cancel}
	clk.n.Store(3)
	sem, _ := newLocalSem(t, algo.Semaphore{Permits: 1, LeaseTTL: time.Minute, Fair: true}, storeClk, clk)
	bg := context.Background()
	holder, _, _ := sem.TryAcquire(bg, "jobs")
	if _, err := sem.Acquire(ctx, "jobs"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire = %v, want context.Canceled", err)
	}
	if err := holder.Release(bg); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := sem.TryAcquire(bg, "jobs"); !ok || err != nil {
		t.Fatalf("TryAcquire after the waiter gave up = %v, %v; want granted (no ghost ahead in the queue)", ok, err)
	}
	if _, err := sem.Acquire(ctx, "jobs"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with a done context = %v, want context.Canceled", err)
	}
}

// TestSemaphoreStoreFailure checks that a failing store is reported at once and that the
// attempt is cleaned up (its reply may have been lost after a grant).
func TestSemaphoreStoreFailure(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(semStart)
	sem, ws := newLocalSem(t, algo.Semaphore{Permits: 1, LeaseTTL: time.Minute}, clk, clk)
	down := fmt.Errorf("%w: boom", store.ErrUnavailable)
	ws.fail.Store(&down)
	ctx := context.Background()
	if _, err := sem.Acquire(ctx, "jobs"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Acquire = %v, want ErrUnavailable", err)
	}
	if _, _, err := sem.TryAcquire(ctx, "jobs"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("TryAcquire = %v, want ErrUnavailable", err)
	}
	if got := ws.releases.Load(); got != 2 {
		t.Errorf("%d cleanup releases after 2 failed attempts, want 2", got)
	}
	ws.fail.Store(nil)
	if _, err := sem.Acquire(ctx, ""); !errors.Is(err, store.ErrInvalidKey) {
		t.Fatalf("Acquire with an empty name = %v, want ErrInvalidKey", err)
	}
	if got := ws.releases.Load(); got != 2 {
		t.Errorf("%d cleanup releases, want still 2 (none after an invalid name)", got)
	}
}

// TestSemaphoreConcurrentNeverExceeds runs goroutines through a real-clock semaphore:
// never more than Permits hold at once, and everybody gets through.
func TestSemaphoreConcurrentNeverExceeds(t *testing.T) {
	t.Parallel()
	for _, fair := range []bool{false, true} {
		t.Run(fmt.Sprint("fair=", fair), func(t *testing.T) {
			t.Parallel()
			const goroutines, rounds, permits = 12, 20, 3
			sem, _ := newLocalSem(t, algo.Semaphore{Permits: permits, LeaseTTL: time.Minute, Fair: fair},
				clockx.Real(), clockx.Real(), semaphore.WithPoll(time.Millisecond))
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var inUse, peak atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, goroutines)
			for g := 0; g < goroutines; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < rounds; i++ {
						l, err := sem.Acquire(ctx, "jobs")
						if err != nil {
							errs <- err
							return
						}
						n := inUse.Add(1)
						for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
						}
						runtime.Gosched()
						inUse.Add(-1)
						if err := l.Release(ctx); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			if p := peak.Load(); p > permits || p < 1 {
				t.Fatalf("peak of %d holders, want 1..%d", p, permits)
			}
		})
	}
}
