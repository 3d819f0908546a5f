package distributed_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
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

// TestBatchingGate covers what a caller sees when its pipeline, or the one ahead of it,
// is held at the gate: Close, a context that ends, and an error of one script.
func TestBatchingGate(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	t.Run("Close", func(t *testing.T) { t.Parallel(); testBatchedClose(t, srv) })
	t.Run("Context", func(t *testing.T) { t.Parallel(); testBatchedContext(t, srv) })
	t.Run("WrongType", func(t *testing.T) { t.Parallel(); testBatchedWrongType(t, srv) })
}

// heldStore returns a batching store with one flusher on a client of its own with a gate,
// its script loaded, and a context for the test.
func heldStore(t *testing.T, srv *redistest.Server, opts ...distributed.Option) (*distributed.Store, *gate, context.Context) {
	t.Helper()
	c := srv.Client(t)
	g := newGate(c)
	opts = append([]distributed.Option{distributed.WithClientClock(fakeClock()),
		distributed.WithBatching(distributed.Batching{MaxInFlight: 1})}, opts...)
	s := newStore(t, c, opts...)
	ctx := ctxTimeout(t, 30*time.Second)
	if _, err := s.Apply(ctx, "warm", counter{Limit: 1}, algo.Request{N: 1}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.open)
	return s, g, ctx
}

// testBatchedClose closes the store while one pipeline is held and ten calls are queued:
// new calls get ErrClosed at once, Close waits, and every queued call is still sent and
// answered.
func testBatchedClose(t *testing.T, srv *redistest.Server) {
	s, g, ctx := heldStore(t, srv)
	a := counter{Limit: 100}
	g.hold()
	var wg sync.WaitGroup
	var answered atomic.Int64
	call := func(key string) {
		defer wg.Done()
		d, err := s.Apply(ctx, key, a, algo.Request{N: 1})
		if err != nil || !d.Allowed {
			t.Errorf("call queued before Close: %+v, %v; want allowed", d, err)
			return
		}
		answered.Add(1)
	}
	wg.Add(1)
	go call("first")
	g.wait(t)
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go call(fmt.Sprint("k", i))
	}
	waitQueued(t, s, 10)
	closed := make(chan struct{})
	go func() {
		_ = s.Close()
		close(closed)
	}()
	waitFor(t, func() bool { return distributed.BatchClosed(s) }, func() string { return "Close did not start" })
	if _, err := s.Apply(ctx, "late", a, algo.Request{N: 1}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Apply after Close = %v, want store.ErrClosed", err)
	}
	if err := s.Refund(ctx, "late", a, 1, 0); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Refund after Close = %v, want store.ErrClosed", err)
	}
	select {
	case <-closed:
		t.Fatal("Close returned while calls were still queued")
	default:
	}
	g.open()
	wg.Wait()
	select {
	case <-closed:
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not return after the queue was answered")
	}
	if got := answered.Load(); got != 11 {
		t.Errorf("%d of the 11 calls made before Close were answered", got)
	}
}

// testBatchedContext cancels callers while their pipeline is held: one whose command is
// in the held pipeline and one queued behind it. Both return at once with the context's
// error, which is not a store failure (it does not wrap ErrUnavailable). The first's script still runs once the pipeline goes
// (as a plain call's may after a timeout); the queued one is never sent.
func testBatchedContext(t *testing.T, srv *redistest.Server) {
	s, g, ctx := heldStore(t, srv)
	a := counter{Limit: 10}
	g.reset()
	g.hold()
	var wg sync.WaitGroup
	wg.Add(2)
	for _, key := range []string{"k", "other"} { // sent alone; then queued, with "sent"
		go func() {
			defer wg.Done()
			if _, err := s.Apply(ctx, key, a, algo.Request{N: 1}); err != nil {
				t.Error(err)
			}
		}()
		if key == "k" {
			g.wait(t)
		}
	}
	sent, cancelSent := context.WithCancel(ctx)
	queued, cancelQueued := context.WithCancel(ctx)
	errs := make(chan error, 2)
	go func() {
		_, err := s.Apply(sent, "k", a, algo.Request{N: 1})
		errs <- err
	}()
	waitQueued(t, s, 2)
	g.let()   // the first call goes; the flusher takes the two queued ones
	g.wait(t) // and holds them at the gate
	go func() {
		_, err := s.Apply(queued, "k", a, algo.Request{N: 1})
		errs <- err
	}()
	waitQueued(t, s, 1)
	for _, cancel := range []context.CancelFunc{cancelQueued, cancelSent} {
		cancel()
		select {
		case err := <-errs:
			if errors.Is(err, store.ErrUnavailable) || !errors.Is(err, context.Canceled) {
				t.Errorf("cancelled call: %v, want an error wrapping context.Canceled and not ErrUnavailable", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("a cancelled call did not return while its pipeline was held")
		}
	}
	g.open()
	wg.Wait()
	d, err := s.Apply(ctx, "k", a, algo.Request{N: 1})
	if err != nil || !d.Allowed || d.Remaining != 7 {
		t.Errorf("Apply after the cancelled calls = %+v, %v; want allowed with Remaining 7 (the sent call ran, the queued one did not)", d, err)
	}
	if got := g.sizes(); !slices.Equal(got, []int{1, 2, 1}) {
		t.Errorf("pipeline sizes %v, want [1 2 1]: the queued call must not be sent once cancelled", got)
	}
}

// testBatchedWrongType puts a call on a key holding other data in one pipeline with a
// good call: only the first fails, with exactly the error a plain store returns.
func testBatchedWrongType(t *testing.T, srv *redistest.Server) {
	prefix := freshPrefix()
	s, g, ctx := heldStore(t, srv, distributed.WithPrefix(prefix))
	c := srv.Client(t)
	plainStore := teststore.Redis(t, c, distributed.WithTimeout(testTimeout), distributed.WithPrefix(prefix), distributed.WithClientClock(fakeClock()))
	a := counter{Limit: 3}
	if err := c.HSet(ctx, prefix+"{user 1}:ctr", "f", "v").Err(); err != nil {
		t.Fatal(err)
	}
	_, want := plainStore.Apply(ctx, "user 1", a, algo.Request{N: 1})
	if want == nil {
		t.Fatal("plain Apply on a key holding a hash succeeded")
	}
	g.reset()
	g.hold()
	var wg sync.WaitGroup
	wg.Add(3)
	go func() {
		defer wg.Done()
		if _, err := s.Apply(ctx, "first", a, algo.Request{N: 1}); err != nil {
			t.Error(err)
		}
	}()
	g.wait(t)
	go func() {
		defer wg.Done()
		_, err := s.Apply(ctx, "user 1", a, algo.Request{N: 1})
		if err == nil || err.Error() != want.Error() || !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("batched Apply on a key holding a hash: %v\nwant the plain store's error: %v", err, want)
		}
	}()
	waitQueued(t, s, 1)
	go func() {
		defer wg.Done()
		if d, err := s.Apply(ctx, "user 2", a, algo.Request{N: 1}); err != nil || !d.Allowed {
			t.Errorf("good call batched with a WRONGTYPE one: %+v, %v; want allowed", d, err)
		}
	}()
	waitQueued(t, s, 2)
	g.open()
	wg.Wait()
	if got := g.sizes(); !slices.Equal(got, []int{1, 2}) {
		t.Errorf("pipeline sizes %v, want [1 2]", got)
	}
}

// TestBatchingServerPaused pauses the server (CLIENT PAUSE, as a hung server): every call
// returns within the store's timeout, pipeline and queue included, with an error wrapping
// ErrUnavailable; once the server is back, calls succeed. The pause cannot be lifted early
// (CLIENT UNPAUSE waits for it too) and the callers may be descheduled past it on a loaded
// machine, so a call is required to fail only if it ended while the pause certainly lasted,
// and the pause is long enough that a call waiting for it takes far longer than the slack.
func TestBatchingServerPaused(t *testing.T) {
	t.Parallel()
	const (
		timeout = 150 * time.Millisecond
		slack   = 1500 * time.Millisecond // generous for -race on a loaded machine, still far below the pause
		pause   = 4 * time.Second
	)
	srv := redistest.Start(t)
	c := srv.Client(t)
	s := newStore(t, c, distributed.WithTimeout(timeout),
		distributed.WithBatching(distributed.Batching{MaxBatch: 4, MaxInFlight: 1}))
	ctx := ctxTimeout(t, 30*time.Second)
	a := algo.TokenBucket{Rate: 1000, Burst: 1000}
	if _, err := s.Apply(ctx, "warm", a, algo.Request{N: 1}); err != nil {
		t.Fatal(err)
	}
	admin := srv.Client(t)
	paused := time.Now() // the pause starts after this, so it lasts at least until paused+pause
	if err := admin.Do(ctx, "client", "pause", pause.Milliseconds(), "all").Err(); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var failed atomic.Int64
	for i := 0; i < 16; i++ { // 16 calls, batches of 4, one in flight: most of them queue
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			_, err := s.Apply(ctx, fmt.Sprint("k", i), a, algo.Request{N: 1})
			end := time.Now()
			switch {
			case errors.Is(err, store.ErrUnavailable):
				failed.Add(1)
			case err != nil:
				t.Errorf("call to a paused server: %v, want an error wrapping ErrUnavailable", err)
			case end.Before(paused.Add(pause)):
				t.Errorf("call to a paused server succeeded %v before the pause could end", paused.Add(pause).Sub(end))
			}
			if took := end.Sub(start); took > timeout+slack {
				t.Errorf("call to a paused server took %v, want ≤ %v + %v", took, timeout, slack)
			}
		}()
	}
	wg.Wait()
	if failed.Load() == 0 {
		t.Error("no call failed: none was made while the server was paused")
	}
	// A client with no deadline of its own waits for the end of the pause.
	waiter := redis.NewClient(&redis.Options{Addr: srv.Addr(), ReadTimeout: -1})
	defer waiter.Close()
	if err := waiter.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, "after", a, algo.Request{N: 1}); err != nil {
		t.Errorf("Apply after the pause: %v", err)
	}
}

// TestBatchingKillMidTraffic is TestKillMidTraffic on a batching store: after the kill,
// every call fails with ErrUnavailable within the timeout, and once the store and the
// client are closed no goroutine is left (the flushers included).
//
// It does not call t.Parallel: it counts goroutines.
func TestBatchingKillMidTraffic(t *testing.T) {
	const (
		workers = 16
		after   = 10
		timeout = 200 * time.Millisecond
		slack   = 1500 * time.Millisecond // a loaded machine; still below go-redis's 3 s read timeout
	)
	srv := redistest.Start(t)
	baseline := runtime.NumGoroutine()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
	s := teststore.Redis(t, c, distributed.WithTimeout(timeout), distributed.WithPrefix(freshPrefix()),
		distributed.WithBatching(distributed.Batching{MaxBatch: 4}))
	a := algo.TokenBucket{Rate: 1e6, Burst: 1000}

	var (
		killed atomic.Bool
		warm   sync.WaitGroup
		wg     sync.WaitGroup
	)
	warm.Add(workers)
	wg.Add(workers)
	for w := 0; w < workers; w++ {
		go func() {
			defer wg.Done()
			key := fmt.Sprint("w", w)
			warmed := false
			for done := 0; done < after; {
				wasKilled := killed.Load()
				start := time.Now()
				_, err := s.Apply(context.Background(), key, a, algo.Request{N: 1})
				took := time.Since(start)
				if !warmed {
					if err != nil {
						t.Errorf("worker %d: call before the kill: %v", w, err)
					}
					warmed = true
					warm.Done()
				}
				if !wasKilled {
					continue
				}
				done++
				switch {
				case err == nil:
					t.Errorf("worker %d: call after the kill succeeded", w)
				case !errors.Is(err, store.ErrUnavailable):
					t.Errorf("worker %d: %v does not wrap store.ErrUnavailable", w, err)
				case took > timeout+slack:
					t.Errorf("worker %d: call after the kill took %v, want ≤ %v + %v", w, took, timeout, slack)
				}
			}
		}()
	}
	warm.Wait()
	srv.Kill()
	killed.Store(true)
	wg.Wait()
	_ = s.Close()
	_ = c.Close()
	waitGoroutines(t, baseline, 60*time.Second)
}
