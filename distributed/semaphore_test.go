package distributed_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/store"
	"github.com/ratekit/limiter/store/storetest"
)

// semFactory makes semaphore stores on one shared client, isolated by a fresh prefix each.
func semFactory(c redis.UniversalClient) storetest.SemaphoreFactory {
	return func(t *testing.T, clk *clockx.Fake) store.SemaphoreStore {
		return teststore.Redis(t, c, distributed.WithPrefix(freshPrefix()), distributed.WithClientClock(clk),
			distributed.WithTimeout(testTimeout))
	}
}

func TestSemaphoreConformance(t *testing.T) {
	t.Parallel()
	t.Run("SingleNode", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t)
		storetest.RunSemaphore(t, semFactory(redistest.WithoutExpiry(srv.Client(t)))) // fake clocks against real TTLs
	})
	t.Run("Cluster", func(t *testing.T) {
		t.Parallel()
		cl := redistest.StartCluster(t, 3)
		storetest.RunSemaphore(t, semFactory(redistest.WithoutExpiry(cl.Client(t))))
	})
}

// semKeys is the documented key layout of a semaphore, written independently of the code.
func semKeys(prefix, name string) (holders, queue, expiries, counter string) {
	base := prefix + "{" + strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D").Replace(name) + "}:sem"
	return base, base + ":q", base + ":qe", base + ":n"
}

// TestSemaphoreKeysAndTTL checks the key layout and that every key written expires with
// its latest lease or queue place, and disappears when emptied.
func TestSemaphoreKeysAndTTL(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := ctxTimeout(t, 30*time.Second)
	clk := fakeClock()
	prefix := freshPrefix()
	s := teststore.Redis(t, c, distributed.WithTimeout(testTimeout), distributed.WithPrefix(prefix), distributed.WithClientClock(clk))
	cfg := algo.Semaphore{Permits: 2, LeaseTTL: 20 * time.Second, Fair: true}
	h, q, qe, n := semKeys(prefix, "jobs{1}")

	// within checks a key's TTL against want, plus the client clock's padding (clock.go),
	// less the real time the test has taken so far (every write came after began, so no
	// TTL has counted down longer).
	began := time.Now()
	within := func(key string, want time.Duration) {
		t.Helper()
		want += distributed.DefaultClockTolerance
		got, err := c.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if got > want || got < want-time.Since(began)-time.Millisecond {
			t.Errorf("PTTL %s = %v, want %v (less the test's own time)", key, got, want)
		}
	}
	call := func(what string, got, want any, err error) {
		t.Helper()
		if err != nil || got != want {
			t.Fatalf("%s = %+v, %v; want %+v", what, got, err, want)
		}
	}
	acquire := func(token string, queue time.Duration) algo.SemaphoreResult {
		t.Helper()
		r, err := s.Acquire(ctx, "jobs{1}", cfg, token, queue)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	gone := func(keys ...string) {
		t.Helper()
		if got, err := c.Exists(ctx, keys...).Result(); err != nil || got != 0 {
			t.Fatalf("EXISTS %q = %d, %v; want 0", keys, got, err)
		}
	}

	call("Acquire(a)", acquire("a", 0).Acquired, true, nil) // t0: a until t0+20s
	within(h, 20*time.Second)
	clk.Add(5 * time.Second)
	call("Acquire(b)", acquire("b", 0).Acquired, true, nil) // t0+5s: b until t0+25s
	within(h, 20*time.Second)
	call("Acquire(w)", acquire("w", 30*time.Second).Acquired, false, nil) // queued until t0+35s
	for _, k := range []string{q, qe, n} {
		within(k, 30*time.Second)
	}
	clk.Add(5 * time.Second) // t0+10s
	ok, err := s.Release(ctx, "jobs{1}", "b")
	call("Release(b)", ok, true, err)
	within(h, 10*time.Second) // the latest lease is a's again
	ok, err = s.Renew(ctx, "jobs{1}", cfg, "a")
	call("Renew(a)", ok, true, err)
	within(h, 20*time.Second)
	call("Acquire(w)", acquire("w", 30*time.Second).Acquired, true, nil)
	gone(q, qe, n) // the last waiter left the queue: its three keys go at once
	ok, err = s.Release(ctx, "jobs{1}", "w")
	call("Release(w)", ok, true, err)
	ok, err = s.Release(ctx, "jobs{1}", "a")
	call("Release(a)", ok, true, err)
	gone(h)
	// Calls on an empty semaphore create no key.
	_, err = s.Holders(ctx, "jobs{1}")
	call("Holders", err == nil, true, nil)
	ok, err = s.Renew(ctx, "jobs{1}", cfg, "a")
	call("Renew(a) after release", ok, false, err)
	gone(h, q, qe, n)

	// A waiter that never comes back: once its place has expired (on the store's clock),
	// the next call removes it, and the emptied queue's keys with it.
	call("Acquire(a)", acquire("a", 0).Acquired, true, nil)
	call("Acquire(b)", acquire("b", 0).Acquired, true, nil)
	call("Acquire(dead)", acquire("dead", time.Second).Acquired, false, nil)
	clk.Add(time.Second)
	_, err = s.Holders(ctx, "jobs{1}")
	call("Holders", err == nil, true, nil)
	gone(q, qe, n)
}

// TestSemaphoreServerTime checks that without WithClientClock the leases are stamped with the
// server's TIME, whatever the client's clock says.
func TestSemaphoreServerTime(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := ctxTimeout(t, 30*time.Second)
	prefix := freshPrefix()
	s := teststore.Redis(t, c, distributed.WithPrefix(prefix))
	cfg := algo.Semaphore{Permits: 2, LeaseTTL: time.Hour}
	before, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if r, err := s.Acquire(ctx, "n", cfg, "a", 0); err != nil || !r.Acquired {
		t.Fatalf("Acquire = %+v, %v", r, err)
	}
	after, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	h, _, _, _ := semKeys(prefix, "n")
	score, err := c.ZScore(ctx, h, "a").Result()
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := before.Add(time.Hour).UnixMicro(), after.Add(time.Hour).UnixMicro()
	if exp := int64(score); exp < lo || exp > hi {
		t.Fatalf("lease expiry %d µs is not server TIME + LeaseTTL, in [%d, %d]", exp, lo, hi)
	}
}

// TestSemaphoreRedisRestart kills the server under held leases: calls fail with
// store.ErrUnavailable while it is down; after a restart without persistence the
// semaphore is empty (the leases are lost: Renew reports false, a new holder is granted)
// and the script, gone from the new server's cache, is loaded again transparently.
func TestSemaphoreRedisRestart(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := ctxTimeout(t, 30*time.Second)
	s := teststore.Redis(t, c, distributed.WithPrefix(freshPrefix()), distributed.WithTimeout(time.Second))
	cfg := algo.Semaphore{Permits: 1, LeaseTTL: time.Minute, Fair: true}
	if r, err := s.Acquire(ctx, "n", cfg, "old", time.Minute); err != nil || !r.Acquired {
		t.Fatalf("Acquire = %+v, %v", r, err)
	}

	srv.Kill()
	_, err := s.Acquire(ctx, "n", cfg, "new", time.Minute)
	if !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Acquire while Redis is down: err = %v, want ErrUnavailable", err)
	}
	if _, err := s.Renew(ctx, "n", cfg, "old"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Renew while Redis is down: err = %v, want ErrUnavailable", err)
	}

	srv.Restart()
	// The pool may hand out connections to the dead server once; a bounded retry absorbs it.
	var n int64
	for try := 0; ; try++ {
		if n, err = s.Holders(ctx, "n"); err == nil || try == 5 {
			break
		}
	}
	if err != nil || n != 0 {
		t.Fatalf("Holders after restart = %d, %v; want 0 (state is lost)", n, err)
	}
	if ok, err := s.Renew(ctx, "n", cfg, "old"); ok || err != nil {
		t.Fatalf("Renew of a lease lost with the restart = %v, %v; want false", ok, err)
	}
	if r, err := s.Acquire(ctx, "n", cfg, "new", time.Minute); err != nil || !r.Acquired {
		t.Fatalf("Acquire after restart = %+v, %v; want granted", r, err)
	}
}

// TestSemaphoreWrongType checks that a key holding other data is reported, not hidden.
func TestSemaphoreWrongType(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := ctxTimeout(t, 30*time.Second)
	prefix := freshPrefix()
	s := teststore.Redis(t, c, distributed.WithPrefix(prefix))
	h, _, _, _ := semKeys(prefix, "n")
	if err := c.Set(ctx, h, "not a sorted set", 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := s.Acquire(ctx, "n", algo.Semaphore{Permits: 1, LeaseTTL: time.Second}, "t", 0)
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "another type") {
		t.Fatalf("err = %v, want ErrUnavailable explaining the key holds another type", err)
	}
}
