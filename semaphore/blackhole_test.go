package semaphore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/semaphore"
)

// TestSemaphoreKeepAliveBlackholedRedis is issue 11's scenario: one permit, LeaseTTL
// 1.5 s, and the holder's connection to Redis stops answering (a blackhole, not a refused
// connection) right after the grant, with go-redis's default client options. Another
// process, whose connection works, polls for the permit. The holder must be told its
// lease is lost by the lease's Deadline (plus slack for a loaded machine), and that
// Deadline must come before the other process got the permit: two holders of one permit
// must never both believe they hold it. Before, the holder was told after about 5.3 s
// (go-redis's ReadTimeout plus the time already spent), 4 s after the other got it.
//
// It does not call t.Parallel: how soon the holder hears is a matter of scheduling, which
// the package's parallel tests (under -race) can delay by most of a second.
func TestSemaphoreKeepAliveBlackholedRedis(t *testing.T) {
	const (
		ttl   = 1500 * time.Millisecond
		slack = 500 * time.Millisecond // a loaded 2-core machine; the old delay was 4 s
	)
	srv := redistest.Start(t)
	proxy := redistest.NewProxy(t, srv.Addr())
	hc := redis.NewClient(&redis.Options{Addr: proxy.Addr()}) // go-redis defaults
	t.Cleanup(func() { _ = hc.Close() })
	prefix := semPrefix()
	cfg := algo.Semaphore{Permits: 1, LeaseTTL: ttl}
	holderSem, err := semaphore.New(teststore.Redis(t, hc, distributed.WithPrefix(prefix)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	otherSem, err := semaphore.New(teststore.Redis(t, srv.Client(t), distributed.WithPrefix(prefix)), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	lease, ok, err := holderSem.TryAcquire(ctx, "job")
	if !ok || err != nil {
		t.Fatalf("holder's TryAcquire = %v, %v", ok, err)
	}
	lost := lease.KeepAlive(ctx)
	proxy.Set(redistest.Blackhole)

	gotOther := make(chan time.Time, 1)
	go func() {
		for ctx.Err() == nil {
			if _, ok, err := otherSem.TryAcquire(ctx, "job"); ok && err == nil {
				gotOther <- time.Now()
				return
			}
			time.Sleep(5 * time.Millisecond) // polling, as a blocked Acquire does
		}
	}()

	var toldAt time.Time
	select {
	case err := <-lost:
		toldAt = time.Now()
		if !errors.Is(err, semaphore.ErrLeaseExpired) {
			t.Fatalf("KeepAlive stopped with %v, want ErrLeaseExpired", err)
		}
	case <-ctx.Done():
		t.Fatal("KeepAlive never reported the lost lease")
	}
	deadline := lease.Deadline()
	if toldAt.After(deadline.Add(slack)) {
		t.Errorf("holder told %v after its lease's Deadline, want ≤ %v", toldAt.Sub(deadline), slack)
	}
	var otherAt time.Time
	select {
	case otherAt = <-gotOther:
	case <-ctx.Done():
		t.Fatal("the other process never got the permit")
	}
	if !deadline.Before(otherAt) {
		t.Errorf("the other process got the permit %v before the holder's Deadline", deadline.Sub(otherAt))
	}
	t.Logf("holder told %v after its Deadline; the other got the permit %v after it",
		toldAt.Sub(deadline), otherAt.Sub(deadline))
}
