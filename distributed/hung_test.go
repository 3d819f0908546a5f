package distributed_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/store"
)

// TestHungOrRefusedServerBoundedCalls puts a proxy between the store and Redis, makes it
// blackhole (a server that accepts but never answers) or refuse connections, and checks
// that every call, from several goroutines, fails with store.ErrUnavailable, ended by the
// store's own deadline (its default timeout): with go-redis's default options (which
// ignore context deadlines on sockets) and with ContextTimeoutEnabled, with and without
// batching, for Apply, Refund, ApplyAll and the semaphore's calls.
//
// It measures no time, so that a loaded machine cannot fail it: the client's read and
// write timeouts are a minute, so a call to a blackholed server can return within the
// test only by the store's deadline, which its error names (context.DeadlineExceeded,
// or the socket deadline go-redis derives from it); and the goroutines of the calls given
// up on stay within the store's bound.
func TestHungOrRefusedServerBoundedCalls(t *testing.T) {
	srv := redistest.Start(t)
	for _, mode := range []redistest.ProxyMode{redistest.Blackhole, redistest.Refuse} {
		for _, cte := range []bool{false, true} {
			for _, batched := range []bool{false, true} {
				name := fmt.Sprintf("%s/ContextTimeoutEnabled=%v/batching=%v", modeName(mode), cte, batched)
				t.Run(name, func(t *testing.T) {
					proxy := redistest.NewProxy(t, srv.Addr())
					c := redis.NewClient(&redis.Options{Addr: proxy.Addr(), ContextTimeoutEnabled: cte,
						ReadTimeout: time.Minute, WriteTimeout: time.Minute})
					t.Cleanup(func() { _ = c.Close() })
					var opts []distributed.Option // the default timeout
					if batched {
						opts = append(opts, distributed.WithBatching(distributed.Batching{}))
					}
					// Not newStore, whose generous test timeout would replace the default.
					s := teststore.Redis(t, c, append(opts, distributed.WithPrefix(freshPrefix()))...)
					t.Cleanup(func() { _ = s.Close() })
					checkBounded(t, s, proxy, mode)
				})
			}
		}
	}
}

func modeName(m redistest.ProxyMode) string {
	if m == redistest.Blackhole {
		return "blackhole"
	}
	return "refused"
}

// checkBounded warms s up through proxy, switches proxy to mode and times calls.
func checkBounded(t *testing.T, s *distributed.Store, proxy *redistest.Proxy, mode redistest.ProxyMode) {
	t.Helper()
	ctx := context.Background()
	a := algo.TokenBucket{Rate: 1e6, Burst: 1000}
	sem := algo.Semaphore{Permits: 2, LeaseTTL: time.Second}
	const workers = 4
	for w := 0; w < workers; w++ { // a connection per worker in the pool, all then blackholed
		// The default timeout can be short for a first call on a loaded machine: a few
		// tries are allowed.
		for try := 1; ; try++ {
			_, err := s.Apply(ctx, fmt.Sprintf("w%d", w), a, algo.Request{N: 1})
			if err == nil {
				break
			}
			if try == 50 {
				t.Fatalf("warm-up: %v", err)
			}
		}
	}
	proxy.Set(mode)

	calls := []struct {
		name string
		f    func(key string) error
	}{
		{"Apply", func(k string) error { _, err := s.Apply(ctx, k, a, algo.Request{N: 1}); return err }},
		{"Refund", func(k string) error { return s.Refund(ctx, k, a, 1, 1) }},
		{"ApplyAll", func(k string) error {
			_, _, err := s.ApplyAll(ctx, k, []algo.Algorithm{a, algo.FixedWindow{Limit: 5, Window: time.Second}}, algo.Request{N: 1})
			return err
		}},
		{"Acquire", func(k string) error { _, err := s.Acquire(ctx, k, sem, "tok", 0); return err }},
		{"Renew", func(k string) error { _, err := s.Renew(ctx, k, sem, "tok"); return err }},
	}
	before := guardGoroutines()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := 0; round < 2; round++ {
				for _, c := range calls {
					err := c.f(fmt.Sprintf("w%d", w))
					if !errors.Is(err, store.ErrUnavailable) {
						t.Errorf("%s: error %v, want one wrapping store.ErrUnavailable", c.name, err)
					}
					if mode == redistest.Blackhole && !deadlineError(err) {
						t.Errorf("%s: error %v, want the store's deadline", c.name, err)
					}
				}
			}
		}()
	}
	wg.Wait()
	if left := guardGoroutines() - before; left > distributed.MaxAbandonedCalls {
		t.Errorf("%d goroutines of the store outlive their callers, want ≤ %d", left, distributed.MaxAbandonedCalls)
	}
}

// deadlineError reports an error that a deadline ended: the context's, or the socket
// deadline go-redis sets from it (ContextTimeoutEnabled).
func deadlineError(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestHungServerGoroutinesBounded sends 400 concurrent calls to a blackholed server with
// a client that ignores context deadlines and has a pool large enough for all of them:
// the calls given up on keep running until go-redis's own timeouts end them, but no more
// than distributed.MaxAbandonedCalls of them, whatever the concurrency. The goroutines
// left are counted from the stacks of the goroutines the store started, once every caller
// has returned: go-redis's ReadTimeout is a minute, so none of them can have ended by
// then, and the count does not depend on timing.
//
// It does not call t.Parallel: it counts goroutines.
func TestHungServerGoroutinesBounded(t *testing.T) {
	srv := redistest.Start(t)
	for _, batched := range []bool{false, true} {
		t.Run(fmt.Sprintf("batching=%v", batched), func(t *testing.T) {
			proxy := redistest.NewProxy(t, srv.Addr())
			// A large pool, so that go-redis's own pool bound does not hide the store's,
			// and a long ReadTimeout, so that no call given up on ends during the test.
			c := redis.NewClient(&redis.Options{Addr: proxy.Addr(), PoolSize: 1000,
				ReadTimeout: time.Minute, WriteTimeout: time.Minute})
			t.Cleanup(func() { _ = c.Close() }) // ends the calls still hung
			opts := []distributed.Option{distributed.WithTimeout(50 * time.Millisecond)}
			if batched {
				opts = append(opts, distributed.WithBatching(distributed.Batching{MaxBatch: 1}))
			}
			s := newStore(t, c, opts...)
			a := algo.TokenBucket{Rate: 1e6, Burst: 1000}
			// Warm up (a connection, the script cached); 50 ms can be short for that on a
			// loaded machine, so a few tries are allowed.
			for try := 1; ; try++ {
				_, err := s.Apply(context.Background(), "k", a, algo.Request{N: 1})
				if err == nil {
					break
				}
				if try == 50 {
					t.Fatalf("warm-up: %v", err)
				}
			}
			proxy.Set(redistest.Blackhole)
			before := guardGoroutines()
			const callers = 400
			var wg sync.WaitGroup
			start := make(chan struct{})
			for w := 0; w < callers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					_, err := s.Apply(context.Background(), fmt.Sprintf("k%d", w), a, algo.Request{N: 1})
					if !errors.Is(err, store.ErrUnavailable) {
						t.Errorf("a call to a blackholed server: %v, want store.ErrUnavailable", err)
					}
				}()
			}
			close(start)
			wg.Wait()
			left := guardGoroutines() - before
			if left > distributed.MaxAbandonedCalls {
				t.Errorf("%d goroutines of the store outlive the %d callers of a hung server, want ≤ %d",
					left, callers, distributed.MaxAbandonedCalls)
			}
			t.Logf("%d goroutines outlive %d callers (%d before)", left, callers, before)
		})
	}
}

// guardGoroutines counts the goroutines started by the store to bound a call by its
// deadline (see distributed's guard), from the stacks of every goroutine.
func guardGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "created by github.com/ratekit/limiter/distributed.(*guard).do")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// TestGuardQueuesBeyondCap: on a healthy server, more concurrent calls than
// MaxAbandonedCalls (with a client that ignores deadlines, so that every call runs on a
// goroutine of the store's) wait for one another instead of failing: the cap bounds the
// goroutines, not the callers.
func TestGuardQueuesBeyondCap(t *testing.T) {
	srv := redistest.Start(t)
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), PoolSize: 1000})
	t.Cleanup(func() { _ = c.Close() })
	s := newStore(t, c)
	a := algo.TokenBucket{Rate: 1e6, Burst: 1e6}
	const callers = 8 * distributed.MaxAbandonedCalls
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := 0; w < callers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			if _, err := s.Apply(context.Background(), fmt.Sprintf("k%d", w%8), a, algo.Request{N: 1}); err != nil {
				t.Errorf("call %d: %v", w, err)
			}
		}()
	}
	close(start)
	wg.Wait()
}
