package distributed_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/store"
)

// TestKillMidTraffic kills the server under traffic from several goroutines. Every call
// that starts after the kill must fail with an error wrapping store.ErrUnavailable within
// the store's timeout (plus slack for a loaded machine), and once the client is closed no
// goroutine may be left behind.
//
// It does not call t.Parallel: it counts goroutines, and the parallel tests are paused
// while it runs.
func TestKillMidTraffic(t *testing.T) {
	const (
		workers  = 8
		after    = 10 // calls per worker after the kill
		timeout  = 200 * time.Millisecond
		slack    = 1500 * time.Millisecond // a loaded machine; still below go-redis's 3 s read timeout
		deadline = 60 * time.Second
	)
	srv := redistest.Start(t)
	baseline := runtime.NumGoroutine()

	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	s := teststore.Redis(t, c, distributed.WithTimeout(timeout), distributed.WithPrefix(freshPrefix()))
	a := algo.TokenBucket{Rate: 1e6, Burst: 1000}

	var (
		killed  atomic.Bool
		warm    sync.WaitGroup // each worker's first successful call
		wg      sync.WaitGroup
		mu      sync.Mutex
		errs    []string
		slowest time.Duration
	)
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(errs) < 10 {
			errs = append(errs, fmt.Sprintf(format, args...))
		}
	}
	warm.Add(workers)
	wg.Add(workers)
	for w := 0; w < workers; w++ {
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("w%d", w)
			warmed := false
			for done := 0; done < after; {
				start := time.Now()
				wasKilled := killed.Load() // read before the call: only such calls are checked
				_, err := s.Apply(context.Background(), key, a, algo.Request{N: 1})
				took := time.Since(start)
				if !warmed {
					if err != nil {
						report("worker %d: call before the kill failed: %v", w, err)
					}
					warmed = true
					warm.Done()
				}
				if !wasKilled {
					continue
				}
				done++
				mu.Lock()
				slowest = max(slowest, took)
				mu.Unlock()
				if err == nil {
					report("worker %d: call after the kill succeeded", w)
				} else if !errors.Is(err, store.ErrUnavailable) {
					report("worker %d: error %v does not wrap store.ErrUnavailable", w, err)
				}
				if took > timeout+slack {
					report("worker %d: call after the kill took %v, want ≤ %v + %v", w, took, timeout, slack)
				}
			}
		}()
	}
	warm.Wait()
	srv.Kill()
	killed.Store(true)
	wg.Wait()
	for _, e := range errs {
		t.Error(e)
	}
	t.Logf("slowest call after the kill: %v (timeout %v)", slowest, timeout)

	_ = s.Close()
	_ = c.Close()
	start := time.Now()
	waitGoroutines(t, baseline, deadline)
	t.Logf("goroutines back to the baseline %v after the client closed", time.Since(start))
}

// waitGoroutines polls runtime.NumGoroutine until it is back to at most want, failing the
// test with a goroutine dump when that has not happened within limit. Polling (rather than
// one sleep) lets the test pass as soon as the client's background goroutines have seen
// the pool close.
func waitGoroutines(t *testing.T, want int, limit time.Duration) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	stop := time.After(limit)
	for {
		n := runtime.NumGoroutine()
		if n <= want {
			return
		}
		select {
		case <-tick.C:
		case <-stop:
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines still running after %v, want ≤ %d:\n%s", n, limit, want, buf)
		}
	}
}
