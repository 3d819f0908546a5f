package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/semaphore"
	"github.com/ratekit/limiter/store"
)

// slowStore is a semStore whose Acquire and Renew take delay on the semaphore's clock
// (moved before the store answers: the reply arrives that much after the request was
// sent), and which records the deadline of each Renew's context. The deadline is recorded,
// not obeyed: Renew sets it in real time from the fake clock's Deadline (0.5 ms for a
// LeaseTTL of 1 ms), which a loaded machine can pass before the store answers.
type slowStore struct {
	*semStore
	clk   *clockx.Fake
	delay time.Duration

	mu        sync.Mutex
	deadlines []time.Time // of each Renew's context; zero when it had none
}

func (s *slowStore) Acquire(ctx context.Context, name string, cfg algo.Semaphore, token string, q time.Duration) (algo.SemaphoreResult, error) {
	r, err := s.semStore.Acquire(ctx, name, cfg, token, q)
	s.clk.Add(s.delay)
	return r, err
}

func (s *slowStore) Renew(ctx context.Context, name string, cfg algo.Semaphore, token string) (bool, error) {
	dl, _ := ctx.Deadline()
	s.mu.Lock()
	s.deadlines = append(s.deadlines, dl)
	s.mu.Unlock()
	ok, err := s.semStore.Renew(context.WithoutCancel(ctx), name, cfg, token)
	s.clk.Add(s.delay)
	return ok, err
}

func (s *slowStore) lastDeadline() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadlines[len(s.deadlines)-1]
}

// newSlowSem returns a Semaphore on a fake clock over a slowStore whose own clock is
// frozen, so leases never expire in the store by themselves.
func newSlowSem(t *testing.T, ttl, delay time.Duration) (*semaphore.Semaphore, *slowStore, *clockx.Fake) {
	t.Helper()
	clk := clockx.NewFake(semStart)
	_, ws := newLocalSem(t, algo.Semaphore{Permits: 1, LeaseTTL: ttl}, clockx.NewFake(semStart), clk)
	ss := &slowStore{semStore: ws, clk: clk, delay: delay}
	sem, err := semaphore.New(ss, algo.Semaphore{Permits: 1, LeaseTTL: ttl}, semaphore.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	return sem, ss, clk
}

// TestLeaseDeadline checks the Deadline arithmetic: LeaseTTL minus the margin (LeaseTTL/10,
// at least 5 ms, at most LeaseTTL/2) after the moment the last confirmed grant or renewal
// was sent, not when its reply came; a failed or refused renewal leaves it alone.
func TestLeaseDeadline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct{ ttl, margin time.Duration }{
		{time.Millisecond, 500 * time.Microsecond}, // LeaseTTL/2
		{8 * time.Millisecond, 4 * time.Millisecond},
		{20 * time.Millisecond, 5 * time.Millisecond}, // the 5 ms floor
		{50 * time.Millisecond, 5 * time.Millisecond},
		{1500 * time.Millisecond, 150 * time.Millisecond}, // LeaseTTL/10
		{10 * time.Second, time.Second},
	} {
		t.Run(tc.ttl.String(), func(t *testing.T) {
			delay := tc.ttl / 4 // each reply arrives this long after its request was sent
			sem, ss, clk := newSlowSem(t, tc.ttl, delay)
			sent := clk.Now()
			l, ok, err := sem.TryAcquire(ctx, "jobs")
			if !ok || err != nil {
				t.Fatalf("TryAcquire = %v, %v", ok, err)
			}
			if got, want := l.Deadline(), sent.Add(tc.ttl-tc.margin); !got.Equal(want) {
				t.Fatalf("after the grant: Deadline = start + %v, want start + %v", got.Sub(sent), want.Sub(sent))
			}
			clk.Add(tc.ttl / 8)
			sent = clk.Now()
			if err := l.Renew(ctx); err != nil {
				t.Fatal(err)
			}
			if got, want := l.Deadline(), sent.Add(tc.ttl-tc.margin); !got.Equal(want) {
				t.Fatalf("after the renewal: Deadline = sent + %v, want sent + %v", got.Sub(sent), want.Sub(sent))
			}
			before := l.Deadline()
			down := fmt.Errorf("%w: boom", store.ErrUnavailable)
			ss.fail.Store(&down)
			if err := l.Renew(ctx); !errors.Is(err, store.ErrUnavailable) {
				t.Fatalf("Renew with the store down: %v", err)
			}
			if got := l.Deadline(); !got.Equal(before) {
				t.Fatalf("a failed renewal moved Deadline by %v", got.Sub(before))
			}
		})
	}
}

// TestLeaseRenewBoundedByTimeLeft checks that Renew bounds its store call by the time
// left until the lease's Deadline, and only by the caller's context once past it.
func TestLeaseRenewBoundedByTimeLeft(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ttl = 10 * time.Second // Deadline: 9 s after the grant
	sem, ss, clk := newSlowSem(t, ttl, 0)
	l, ok, err := sem.TryAcquire(ctx, "jobs")
	if !ok || err != nil {
		t.Fatalf("TryAcquire = %v, %v", ok, err)
	}
	clk.Add(4 * time.Second)
	before := time.Now()
	if err := l.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	dl := ss.lastDeadline()
	if dl.IsZero() {
		t.Fatal("Renew's store call had no deadline, want the 5 s left")
	}
	// The deadline was set between before and after, to 5 s from then.
	if after := time.Now(); !dl.After(before) || dl.Sub(after) > 5*time.Second {
		t.Fatalf("Renew's store call was bounded by %v, want the 5 s left at most", dl.Sub(before))
	}
	clk.Add(20 * time.Second) // past the Deadline: the store's answer decides
	if err := l.Renew(ctx); err != nil {
		t.Fatal(err)
	}
	if dl := ss.lastDeadline(); !dl.IsZero() {
		t.Fatalf("Renew past the Deadline bounded its call by %v, want the caller's context alone", time.Until(dl))
	}
}

// TestLeaseKeepAliveReportsAtDeadline runs KeepAlive on a fake clock (each sleep moves it
// at once) with the store failing every renewal: the loss is reported exactly at the
// lease's Deadline, LeaseTTL minus the margin after the grant was sent, not at LeaseTTL,
// after three failed attempts.
func TestLeaseKeepAliveReportsAtDeadline(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const ttl = 3 * time.Second
	sem, ss, clk := newSlowSem(t, ttl, 0)
	l, ok, err := sem.TryAcquire(ctx, "jobs")
	if !ok || err != nil {
		t.Fatalf("TryAcquire = %v, %v", ok, err)
	}
	down := fmt.Errorf("%w: boom", store.ErrUnavailable)
	ss.fail.Store(&down)
	err, _ = recvWithin(t, l.KeepAlive(ctx))
	if !errors.Is(err, semaphore.ErrLeaseExpired) || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("KeepAlive stopped with %v, want ErrLeaseExpired wrapping the store's error", err)
	}
	if now, dl := clk.Now(), l.Deadline(); !now.Equal(dl) {
		t.Fatalf("loss reported %v after the grant, want at the Deadline, %v after it",
			now.Sub(semStart), dl.Sub(semStart))
	}
	if got := ss.renews.Load(); got < 3 {
		t.Fatalf("%d renewal attempts before the Deadline, want ≥ 3", got)
	}
}
