package distributed_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/store"
)

// TestRefusedConnectionAnsweredAtOnce points a default go-redis client at a port nothing
// listens on. go-redis retries each dial 5 times 100 ms apart and each command 3 times
// with a backoff, so every call used to take at least 1.7 s (or the store's timeout). The
// first call may pay that; after it, every call must fail well within a third of the
// store's large timeout (3 s: no scheduler makes a refused loopback dial take 1 s) with an
// error wrapping store.ErrUnavailable that names the refusal. Without and with batching
// (a pipeline per flush), without and with ContextTimeoutEnabled.
func TestRefusedConnectionAnsweredAtOnce(t *testing.T) {
	t.Parallel()
	addr := closedPort(t)
	const timeout = 3 * time.Second
	a := algo.TokenBucket{Rate: 1, Burst: 1}
	for _, cte := range []bool{false, true} {
		for _, batched := range []bool{false, true} {
			t.Run(fmt.Sprintf("ContextTimeoutEnabled=%v/batching=%v", cte, batched), func(t *testing.T) {
				t.Parallel()
				c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: cte})
				t.Cleanup(func() { _ = c.Close() })
				opts := []distributed.Option{distributed.WithTimeout(timeout)}
				if !batched {
					opts = append(opts, distributed.WithBatching(distributed.Batching{Off: true}))
				}
				s, err := distributed.New(c, opts...)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				ctx := context.Background()
				_, err = s.Apply(ctx, "k", a, algo.Request{N: 1}) // the first refusal
				checkRefused(t, err, true)
				for i := 0; i < 30; i++ {
					start := time.Now()
					_, err := s.Apply(ctx, "k", a, algo.Request{N: 1})
					if took := time.Since(start); took > timeout/3 {
						t.Fatalf("call %d after the first refusal took %v (timeout %v): %v", i+1, took, timeout, err)
					}
					checkRefused(t, err, true)
				}
			})
		}
	}
}

// TestRefusedThenBackIsUsed kills a real Redis, so that dials are refused, checks that
// calls fail fast naming the refusal, then restarts it on the same port: calls succeed
// again (within go-redis's own redial, once a second) without any call taking long.
func TestRefusedThenBackIsUsed(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t)
	c := srv.Client(t)
	const timeout = 3 * time.Second
	s, err := distributed.New(c, distributed.WithTimeout(timeout), distributed.WithPrefix("refusedback:"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	ctx := context.Background()
	a := algo.TokenBucket{Rate: 1e6, Burst: 1e6}
	apply := func() (time.Duration, error) {
		start := time.Now()
		_, err := s.Apply(ctx, "k", a, algo.Request{N: 1})
		return time.Since(start), err
	}
	if _, err := apply(); err != nil {
		t.Fatal(err)
	}
	srv.Kill()
	// The pool's connection drops, then dials are refused.
	refused := 0
	for i := 0; i < 40; i++ {
		took, err := apply()
		if err == nil || !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("call %d with Redis killed: %v, want an outage", i, err)
		}
		if isRefusal(err) {
			refused++
			if refused > 1 && took > timeout/3 {
				t.Fatalf("call %d after a refusal took %v (timeout %v): %v", i, took, timeout, err)
			}
		}
	}
	if refused < 30 {
		t.Fatalf("%d of 40 calls named the refusal, want ≥ 30", refused)
	}
	srv.Restart()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		took, err := apply()
		if err == nil {
			break
		}
		if took > timeout/3 {
			t.Fatalf("call %d after the restart took %v: %v", i, took, err)
		}
		if i == 1000 { // 10 s of calls: go-redis redials once a second
			t.Fatalf("Redis restarted, still failing: %v", err)
		}
		<-tick.C
	}
}
