package semaphore_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/semaphore"
	"github.com/ratekit/limiter/store"
)

// newMock returns a manual clock reading semStart (see stepClock).
func newMock() *stepClock { return newStepClock(semStart) }

// recvWithin receives from ch, failing the test if nothing arrives within 10 s of real
// time (a bound against hanging, not a synchronisation: the value is expected at once).
func recvWithin(t *testing.T, ch <-chan error) (error, bool) {
	t.Helper()
	select {
	case err, open := <-ch:
		return err, open
	case <-time.After(10 * time.Second):
		t.Fatal("no value from the KeepAlive channel within 10 s")
		return nil, false
	}
}

// TestSemaphoreFairOrderBlocking queues four blocked Acquire calls one after the other and
// checks that permits go to them in arrival order, however their polls interleave.
func TestSemaphoreFairOrderBlocking(t *testing.T) {
	t.Parallel()
	mock := newMock()
	storeClk := clockx.NewFake(semStart) // frozen: no lease or place expires by itself
	sem, ws := newLocalSem(t, algo.Semaphore{Permits: 1, LeaseTTL: time.Minute, Fair: true}, storeClk, mock)
	ws.answers = make(chan semAnswer, 4096)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	holder, ok, err := sem.TryAcquire(ctx, "jobs")
	if !ok || err != nil {
		t.Fatalf("TryAcquire = %v, %v", ok, err)
	}
	<-ws.answers

	type result struct {
		i     int
		lease *semaphore.Lease
		err   error
	}
	results := make(chan result, 4)
	for i := 0; i < 4; i++ {
		go func() {
			l, err := sem.Acquire(ctx, "jobs")
			results <- result{i, l, err}
		}()
		// The clock stands still, so the only call is the newcomer's first attempt: it
		// must be denied with everybody before it ahead.
		a := <-ws.answers
		if want := (algo.SemaphoreResult{Holders: 1, Position: int64(i), RetryAfter: time.Minute}); a.r != want {
			t.Fatalf("waiter %d's first attempt: %+v, want %+v", i, a.r, want)
		}
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for want := 0; want < 4; want++ {
		var got result
		advanceUntil(t, mock, 10*time.Millisecond, 4-want, 10_000, fmt.Sprint("waiter ", want, " granted"), func() bool {
			select {
			case got = <-results:
				return true
			default:
				return false
			}
		})
		if got.err != nil || got.i != want {
			t.Fatalf("grant %d went to waiter %d (err %v), want waiter %d", want, got.i, got.err, want)
		}
		if err := got.lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestLeaseKeepAlive checks that KeepAlive holds a lease far beyond LeaseTTL, and that
// Release stops it.
func TestLeaseKeepAlive(t *testing.T) {
	t.Parallel()
	mock := newMock()
	const ttl = 3 * time.Second
	sem, ws := newLocalSem(t, algo.Semaphore{Permits: 1, LeaseTTL: ttl}, mock, mock)
	ctx := context.Background()
	l, _, _ := sem.TryAcquire(ctx, "jobs")
	ch := l.KeepAlive(ctx)
	if again := l.KeepAlive(ctx); again != ch {
		t.Fatal("a second KeepAlive started another renewer")
	}
	start := mock.Now()
	for i := int64(1); i <= 30; i++ { // 30 renewals: ten times LeaseTTL
		advanceUntil(t, mock, 100*time.Millisecond, 1, 1000, fmt.Sprint("renewal ", i), func() bool {
			return ws.renews.Load() >= i
		})
		if since := mock.Now().Sub(start); since >= ttl {
			t.Fatalf("renewal %d came %v after the previous one, LeaseTTL is %v", i, since, ttl)
		}
		start = mock.Now()
		if _, ok, _ := sem.TryAcquire(ctx, "jobs"); ok {
			t.Fatalf("a second holder got in after %d renewals", i)
		}
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err, open := recvWithin(t, ch); err != nil || !open {
		t.Fatalf("KeepAlive channel after Release: %v (open %v), want nil", err, open)
	}
	if _, open := <-ch; open {
		t.Fatal("KeepAlive channel not closed")
	}
	if n, _ := ws.Holders(ctx, "jobs"); n != 0 {
		t.Fatalf("Holders after Release = %d", n)
	}
	after := l.KeepAlive(ctx)
	if err, open := <-after; err != nil || !open {
		t.Fatalf("KeepAlive after Release: %v (open %v), want nil", err, open)
	}
}

// TestLeaseKeepAliveLost checks that KeepAlive reports a lease that expired anyway (here
// the store's clock jumped past it) with ErrLeaseExpired.
func TestLeaseKeepAliveLost(t *testing.T) {
	t.Parallel()
	mock := newMock()
	storeClk := clockx.NewFake(semStart)
	sem, _ := newLocalSem(t, algo.Semaphore{Permits: 1, LeaseTTL: 3 * time.Second}, storeClk, mock)
	ctx := context.Background()
	l, _, _ := sem.TryAcquire(ctx, "jobs")
	ch := l.KeepAlive(ctx)
	storeClk.Add(3 * time.Second)
	var err error
	advanceUntil(t, mock, 100*time.Millisecond, 1, 1000, "KeepAlive stops", func() bool {
		select {
		case err = <-ch:
			return true
		default:
			return false
		}
	})
	if !errors.Is(err, semaphore.ErrLeaseExpired) {
		t.Fatalf("KeepAlive stopped with %v, want ErrLeaseExpired", err)
	}
	if err := l.Release(ctx); !errors.Is(err, semaphore.ErrLeaseExpired) {
		t.Fatalf("Release of the lost lease: %v, want ErrLeaseExpired", err)
	}
}

// TestLeaseKeepAliveStoreDown checks that renewals failing until the lease's Deadline end
// the keep-alive with ErrLeaseExpired (wrapping the store's error), not before.
func TestLeaseKeepAliveStoreDown(t *testing.T) {
	t.Parallel()
	mock := newMock()
	const ttl = 3 * time.Second
	sem, ws := newLocalSem(t, algo.Semaphore{Permits: 1, LeaseTTL: ttl}, mock, mock)
	ctx := context.Background()
	l, _, _ := sem.TryAcquire(ctx, "jobs")
	down := fmt.Errorf("%w: boom", store.ErrUnavailable)
	ws.fail.Store(&down)
	start := mock.Now()
	ch := l.KeepAlive(ctx)
	var err error
	advanceUntil(t, mock, 100*time.Millisecond, 1, 1000, "KeepAlive gives up", func() bool {
		select {
		case err = <-ch:
			return true
		default:
			return false
		}
	})
	if !errors.Is(err, semaphore.ErrLeaseExpired) || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("KeepAlive stopped with %v, want ErrLeaseExpired wrapping ErrUnavailable", err)
	}
	if since, want := mock.Now().Sub(start), l.Deadline().Sub(start); since < want {
		t.Fatalf("gave up after %v, before the lease's deadline (%v)", since, want)
	}
	if got := ws.renews.Load(); got < 3 {
		t.Fatalf("%d renewal attempts before giving up, want ≥ 3", got)
	}
}

// TestLeaseKeepAliveContext checks that KeepAlive ends with its context, leaving the
// lease held, and that it can be started again.
func TestLeaseKeepAliveContext(t *testing.T) {
	t.Parallel()
	mock := newMock()
	sem, ws := newLocalSem(t, algo.Semaphore{Permits: 1, LeaseTTL: 3 * time.Second}, mock, mock)
	bg := context.Background()
	l, _, _ := sem.TryAcquire(bg, "jobs")
	ctx, cancel := context.WithCancel(bg)
	ch := l.KeepAlive(ctx)
	cancel()
	if err, _ := recvWithin(t, ch); !errors.Is(err, context.Canceled) {
		t.Fatalf("KeepAlive stopped with %v, want context.Canceled", err)
	}
	if n, _ := ws.Holders(bg, "jobs"); n != 1 {
		t.Fatalf("Holders = %d after the keep-alive stopped, want 1", n)
	}
	ch2 := l.KeepAlive(bg)
	if ch2 == ch {
		t.Fatal("KeepAlive after a stopped one returned the old channel")
	}
	advanceUntil(t, mock, 100*time.Millisecond, 1, 1000, "renewal", func() bool { return ws.renews.Load() >= 1 })
	if err := l.Release(bg); err != nil {
		t.Fatal(err)
	}
	if err, _ := recvWithin(t, ch2); err != nil {
		t.Fatalf("second KeepAlive after Release: %v, want nil", err)
	}
}
