package local_test

import (
	"context"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
	"github.com/ratekit/limiter/store/storetest"
)

func TestSemaphoreConformance(t *testing.T) {
	t.Parallel()
	storetest.RunSemaphore(t, func(t *testing.T, clk *clockx.Fake) store.SemaphoreStore {
		return teststore.Local(t, local.WithClock(clk), local.WithSweepInterval(0))
	})
}

// TestSemaphoreMemory checks that a semaphore costs memory only while someone holds or
// waits: released at once when emptied, swept once its last lease has expired.
func TestSemaphoreMemory(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := teststore.Local(t, local.WithClock(clk), local.WithSweepInterval(0))
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	cfg := algo.Semaphore{Permits: 1, LeaseTTL: time.Second, Fair: true}
	mustAcquire := func(name, token string, queue time.Duration, want bool) {
		t.Helper()
		r, err := s.Acquire(ctx, name, cfg, token, queue)
		if err != nil || r.Acquired != want {
			t.Fatalf("Acquire(%s, %s) = %+v, %v; want Acquired %v", name, token, r, err, want)
		}
	}

	// Calls that find nothing create nothing.
	if _, err := s.Holders(ctx, "ghost"); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.Release(ctx, "ghost", "t"); ok || err != nil {
		t.Fatalf("Release of nothing = %v, %v", ok, err)
	}
	if got := s.Len(); got != 0 {
		t.Fatalf("Len() = %d after calls on a missing semaphore, want 0", got)
	}

	mustAcquire("released", "a", 0, true)
	if ok, err := s.Release(ctx, "released", "a"); !ok || err != nil {
		t.Fatalf("Release = %v, %v", ok, err)
	}
	if got := s.Len(); got != 0 {
		t.Fatalf("Len() = %d after the last release, want 0", got)
	}

	mustAcquire("abandoned", "a", 0, true)
	mustAcquire("abandoned", "w", 3*time.Second, false) // queued until +3 s
	clk.Add(2 * time.Second)                            // a's lease has expired
	s.Sweep()
	if got := s.Len(); got != 1 {
		t.Fatalf("Len() = %d while a waiter's place is live, want 1", got)
	}
	clk.Add(time.Second)
	s.Sweep()
	if got := s.Len(); got != 0 {
		t.Fatalf("Len() = %d after every lease and place expired, want 0", got)
	}
}

// TestSemaphoreSharesNamesWithRateLimits checks that a semaphore and a rate limit under
// the same name are independent.
func TestSemaphoreSharesNamesWithRateLimits(t *testing.T) {
	t.Parallel()
	s := teststore.Local(t, local.WithSweepInterval(0))
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	cfg := algo.Semaphore{Permits: 1, LeaseTTL: time.Minute}
	if r, err := s.Acquire(ctx, "k", cfg, "a", 0); err != nil || !r.Acquired {
		t.Fatalf("Acquire = %+v, %v", r, err)
	}
	for _, a := range []algo.Algorithm{algo.TokenBucket{Rate: 1, Burst: 1}, algo.FixedWindow{Limit: 1, Window: time.Second}} {
		if d, err := s.Apply(ctx, "k", a, algo.Request{N: 1}); err != nil || !d.Allowed {
			t.Fatalf("%v on a name held by a semaphore: %+v, %v", a, d, err)
		}
	}
	if n, err := s.Holders(ctx, "k"); err != nil || n != 1 {
		t.Fatalf("Holders = %d, %v; want 1", n, err)
	}
}

// TestSemaphoreSurvivesMaxKeys fills a one-key store with rate-limit keys while a
// semaphore is held: the semaphore's holder must not be forgotten to make room, or a
// second holder would be admitted.
func TestSemaphoreSurvivesMaxKeys(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s := teststore.Local(t, local.WithClock(clk), local.WithSweepInterval(0), local.WithMaxKeys(1), local.WithShards(1))
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	cfg := algo.Semaphore{Permits: 1, LeaseTTL: time.Hour}
	if r, err := s.Acquire(ctx, "sem", cfg, "a", 0); err != nil || !r.Acquired {
		t.Fatalf("Acquire = %+v, %v", r, err)
	}
	for i := 0; i < 10; i++ {
		if _, err := s.Apply(ctx, string(rune('a'+i)), algo.TokenBucket{Rate: 1, Burst: 5}, algo.Request{N: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if r, err := s.Acquire(ctx, "sem", cfg, "b", 0); err != nil || r.Acquired {
		t.Fatalf("a second holder was admitted after MaxKeys evictions: %+v, %v", r, err)
	}
}
