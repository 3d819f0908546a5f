package limiter_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// TestRedisKilledMidTrafficFollowsThePolicy runs real traffic through limiters on a real
// redis-server, kills the server, and checks that every call still answers with its
// policy's answer, none having waited for the dead server (go-redis's own read or dial
// timeout: told by the error, not by elapsed time, which a loaded machine stretches), and
// that a restarted server (empty script cache) is used again. (That a dead Redis leaves no
// goroutine of ours behind is checked at the store level, in distributed's fault tests.)
func TestRedisKilledMidTrafficFollowsThePolicy(t *testing.T) {
	redistest.Require(t)
	srv := redistest.Start(t)

	client := srv.Client(t)
	// The store's timeout: under go-redis's 3 s reads, above what a healthy call takes on a
	// machine beside CPU burners (150 ms failed there).
	const timeout = time.Second
	rs := teststore.Redis(t, client, distributed.WithTimeout(timeout), distributed.WithPrefix("failover:"))
	t.Cleanup(func() { _ = rs.Close() })
	ls := teststore.Local(t, local.WithSweepInterval(0))
	t.Cleanup(func() { _ = ls.Close() })

	rule := algo.TokenBucket{Rate: 1e6, Burst: 1e6}
	fallback, err := limiter.New(ls, algo.TokenBucket{Rate: 1, Burst: 3})
	if err != nil {
		t.Fatal(err)
	}
	policies := map[string]limiter.FailurePolicy{
		"closed":   limiter.FailClosed,
		"open":     limiter.FailOpen,
		"fallback": limiter.Fallback(fallback),
	}
	limiters := map[string]*limiter.Limiter{}
	for name, p := range policies {
		l, err := limiter.New(rs, rule, limiter.WithFailurePolicy(p))
		if err != nil {
			t.Fatal(err)
		}
		limiters[name] = l
	}
	ctx := context.Background()

	// Healthy: every policy answers from Redis without error.
	for name, l := range limiters {
		if d, err := l.Allow(ctx, "k"); err != nil || !d.Allowed {
			t.Fatalf("%s before the kill: %+v, %v", name, d, err)
		}
	}

	srv.Kill()
	var wg sync.WaitGroup
	for name, l := range limiters {
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 5; i++ {
					d, err := l.Allow(ctx, "k")
					if goRedisTimedOut(err) {
						t.Errorf("%s: a call waited for the dead server (go-redis's own timeout): %v", name, err)
					}
					if !errors.Is(err, store.ErrUnavailable) {
						t.Errorf("%s: err = %v, want one wrapping store.ErrUnavailable", name, err)
					}
					switch name {
					case "closed":
						if d.Allowed {
							t.Errorf("closed: allowed with Redis down")
						}
					case "open":
						if !d.Allowed {
							t.Errorf("open: denied with Redis down")
						}
					case "fallback":
						if d.Limit != 3 {
							t.Errorf("fallback: decision %+v is not the fallback limiter's", d)
						}
					}
				}
			}()
		}
	}
	wg.Wait()

	// The fallback limiter really decided: its burst of 3 was spent by the 20 calls.
	if d, err := fallback.Allow(ctx, "k"); err != nil || d.Allowed {
		t.Fatalf("fallback limiter after the outage: %+v, %v (want its burst spent)", d, err)
	}

	// A new process: the script cache is empty, so EVALSHA meets NOSCRIPT. go-redis's
	// pool redials in the background after failed dials, so decisions resume within a
	// bounded time rather than on the very first call: poll for it.
	srv.Restart()
	for name, l := range limiters {
		d, err := l.Allow(ctx, "k")
		for deadline := time.Now().Add(30 * time.Second); err != nil && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond) // polling for the pool's redial, not ordering events
			d, err = l.Allow(ctx, "k")
		}
		if err != nil || !d.Allowed || d.Limit != rule.Burst {
			t.Fatalf("%s after the restart: %+v, %v (want a Redis decision)", name, d, err)
		}
	}
}
