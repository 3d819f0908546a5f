package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/store"
)

// callCounter is a go-redis hook counting the commands and pipelines sent: the calls that
// reached the store's client.
type callCounter struct{ n atomic.Int64 }

func (c *callCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *callCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *callCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// TestDefaultsHungOrRefusedRedis runs a Limiter with the default options (circuit breaker
// on, the store's default timeout) on a Redis behind a proxy that blackholes or refuses,
// with a default go-redis client (which ignores context deadlines on sockets), with and
// without batching. The first calls fail within the store's timeout plus slack; once the
// breaker has opened, calls no longer reach Redis except one probe per cool-down; once
// the proxy forwards again, calls succeed again within about a cool-down.
func TestDefaultsHungOrRefusedRedis(t *testing.T) {
	srv := redistest.Start(t)
	for _, mode := range []redistest.ProxyMode{redistest.Blackhole, redistest.Refuse} {
		for _, batched := range []bool{false, true} {
			name := fmt.Sprintf("%s/batching=%v", map[redistest.ProxyMode]string{
				redistest.Blackhole: "blackhole", redistest.Refuse: "refused"}[mode], batched)
			t.Run(name, func(t *testing.T) {
				proxy := redistest.NewProxy(t, srv.Addr())
				c := redis.NewClient(&redis.Options{Addr: proxy.Addr()}) // go-redis defaults
				t.Cleanup(func() { _ = c.Close() })
				count := &callCounter{}
				c.AddHook(count)
				opts := []distributed.Option{distributed.WithPrefix("breaker:" + name + ":")} // one prefix per subtest
				if !batched {
					opts = append(opts, distributed.WithBatching(distributed.Batching{Off: true}))
				}
				st := teststore.Redis(t, c, opts...)
				t.Cleanup(func() { _ = st.Close() })
				l, err := limiter.New(st, algo.TokenBucket{Rate: 1e6, Burst: 1e6})
				if err != nil {
					t.Fatal(err)
				}
				checkBreakerOnHungRedis(t, l, proxy, mode, count)
			})
		}
	}
}

// breakerCoolDown is CircuitBreaker's default CoolDown, storeTimeout the distributed
// store's default timeout (WithTimeout).
const (
	breakerCoolDown = time.Second
	storeTimeout    = 200 * time.Millisecond
)

func checkBreakerOnHungRedis(t *testing.T, l *limiter.Limiter, proxy *redistest.Proxy, mode redistest.ProxyMode, count *callCounter) {
	ctx := context.Background()
	if _, err := l.Allow(ctx, "k"); err != nil {
		t.Fatalf("warm-up: %v", err)
	}
	proxy.Set(mode)

	// Until the breaker opens, each call fails within the store's timeout, not go-redis's
	// own (3 s reads): told by the error, not by the time it took, which a loaded machine
	// beside CPU burners stretches. The default breaker judges at least 20 calls in a
	// window of 1 s, or 5 outages in a row spanning it: 16 callers make enough of them.
	var (
		opened  atomic.Bool
		wg      sync.WaitGroup
		started = time.Now()
	)
	const callers, patience = 16, 30 * time.Second
	for w := 0; w < callers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !opened.Load() && time.Since(started) < patience {
				_, err := l.Allow(ctx, "k")
				if err == nil {
					t.Error("a call to an unavailable Redis succeeded")
					return
				}
				if errors.Is(err, limiter.ErrCircuitOpen) {
					opened.Store(true)
				}
				if goRedisTimedOut(err) {
					t.Errorf("a call ended on go-redis's own read timeout, not the store's %v: %v", storeTimeout, err)
				}
			}
		}()
	}
	wg.Wait()
	if !opened.Load() {
		t.Fatalf("the breaker did not open in %v of calls by %d callers", patience, callers)
	}
	t.Logf("the breaker opened %v after Redis stopped answering", time.Since(started))

	// Open: calls are answered without Redis, but for one probe per cool-down.
	const calls = 2000
	before := count.n.Load()
	start := time.Now()
	for i := 0; i < calls; i++ {
		if _, err := l.Allow(ctx, "k"); err == nil {
			t.Fatal("a call to an unavailable Redis succeeded")
		}
	}
	elapsed := time.Since(start)
	sent := count.n.Load() - before
	// A probe reaches go-redis once per cool-down; a refused one may be retried by go-redis,
	// which counts once in the hook all the same.
	if probes := int64(elapsed/breakerCoolDown) + 1; sent > probes {
		t.Errorf("%d of %d calls reached Redis in %v with the breaker open, want ≤ %d probes", sent, calls, elapsed, probes)
	}
	t.Logf("breaker open: %d calls in %v (%v per call), %d reached Redis", calls, elapsed, elapsed/calls, sent)

	// Recovery: noticed at the first probe after the proxy forwards again.
	proxy.Set(redistest.Forward)
	restored := time.Now()
	limit := patience // catches a breaker that never closes; the cool-down is 1 s
	for {
		_, err := l.Allow(ctx, "k")
		if err == nil {
			break
		}
		if time.Since(restored) > limit {
			t.Fatalf("still failing %v after Redis came back: %v", limit, err)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition, bounded by limit
	}
	t.Logf("recovered %v after Redis came back (cool-down %v)", time.Since(restored), breakerCoolDown)
}

// goRedisTimedOut reports an error of a network read that timed out by go-redis's own
// deadline: not the store's timeout (context.DeadlineExceeded) nor the caller's.
func goRedisTimedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() && !errors.Is(err, context.DeadlineExceeded)
}

// TestBreakerIgnoresWrongTypeKey: one key of a Redis in use by other data (WRONGTYPE)
// fails every call on it, but Redis is up: with the default breaker and FailClosed, 50
// calls on that key do not cut the healthy keys off. (The breaker used to count them as
// outages: after 5 of them, every key was denied with "circuit open" for a second.)
func TestBreakerIgnoresWrongTypeKey(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	st := teststore.Redis(t, c, distributed.WithPrefix("wrongtype:"))
	t.Cleanup(func() { _ = st.Close() })
	// A slow refill: the state written by the first call lives until the bucket is full
	// again, 1000 s, not the 2 ms a refill of 10^6/s gives it (beside CPU burners the key
	// expired before it was looked up).
	l, err := limiter.New(st, algo.TokenBucket{Rate: 0.001, Burst: 1e6})
	if err != nil {
		t.Fatal(err)
	}
	// The key's state, written once, then replaced by a string.
	if _, err := l.Allow(ctx, "bad"); err != nil {
		t.Fatal(err)
	}
	keys, err := c.Keys(ctx, "wrongtype:*{bad}*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("the state keys of \"bad\": %v, %v", keys, err)
	}
	for _, k := range keys {
		if err := c.Set(ctx, k, "not limiter state", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 50; i++ {
		d, err := l.Allow(ctx, "bad")
		if d.Allowed || !errors.Is(err, store.ErrUnavailable) || errors.Is(err, limiter.ErrCircuitOpen) ||
			!strings.Contains(fmt.Sprint(err), "WRONGTYPE") {
			t.Fatalf("call %d on the bad key: %+v, %v; want denied with the WRONGTYPE error", i, d, err)
		}
	}
	for i := 0; i < 20; i++ {
		if d, err := l.Allow(ctx, fmt.Sprintf("good%d", i)); err != nil || !d.Allowed {
			t.Errorf("healthy key %d after 50 WRONGTYPE calls on another: %+v, %v; want allowed", i, d, err)
		}
	}
}

// TestRefusedRedisNamesCause: a Limiter over a client pointed at a closed port answers
// with an error wrapping store.ErrUnavailable that names the refused connection, not only the
// deadline go-redis gives up at, with the store's timeout and with the limiter's shorter one.
func TestRefusedRedisNamesCause(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = c.Close() })
	st := teststore.Redis(t, c)
	t.Cleanup(func() { _ = st.Close() })
	for _, opts := range [][]limiter.Option{nil, {limiter.WithTimeout(100 * time.Millisecond)}} {
		l, err := limiter.New(st, algo.TokenBucket{Rate: 1, Burst: 1}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			_, err := l.Allow(context.Background(), "k")
			if !errors.Is(err, store.ErrUnavailable) || !errors.Is(err, syscall.ECONNREFUSED) ||
				!strings.Contains(fmt.Sprint(err), "connection refused") {
				t.Errorf("Allow with %d options: %v; want store.ErrUnavailable naming the refused connection", len(opts), err)
			}
		}
	}
}
