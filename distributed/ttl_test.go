package distributed_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
)

// oneOfEach is one config of every algorithm, with limits small enough that a few requests
// reach them.
func oneOfEach() []algo.Algorithm {
	return []algo.Algorithm{
		algo.FixedWindow{Limit: 3, Window: time.Second},
		algo.SlidingWindowLog{Limit: 3, Window: time.Second},
		algo.SlidingWindowCounter{Limit: 3, Window: time.Second},
		algo.TokenBucket{Rate: 2, Burst: 3},
		algo.LeakyBucket{Rate: 2, Capacity: 3},
		algo.GCRA{Rate: 2, Burst: 3},
	}
}

// redisKeys is the documented key layout, written independently of the store's code:
// <prefix>{<escaped key>}:<slot><suffix> for each of the script's key suffixes.
func redisKeys(prefix, key string, a algo.Algorithm) []string {
	esc := strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D").Replace(key)
	base := prefix + "{" + esc + "}:" + a.Slot()
	var keys []string
	for _, suffix := range a.(algo.Scripted).Script().Keys {
		keys = append(keys, base+suffix)
	}
	return keys
}

// TestTTLFollowsResetAfter checks, for every algorithm and after every write, that each key
// of the state expires when the decision says the state is fresh again, plus the client
// clock's tolerance (see clock.go): PTTL is ResetAfter plus DefaultClockTolerance rounded
// up to whole ms, less the time the check itself took.
func TestTTLFollowsResetAfter(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := ctxTimeout(t, 60*time.Second)
	for _, a := range oneOfEach() {
		clk := fakeClock()
		prefix := freshPrefix()
		s := teststore.Redis(t, c, distributed.WithPrefix(prefix), distributed.WithClientClock(clk))
		keys := redisKeys(prefix, "k", a)
		writes := 0
		for i, step := range []time.Duration{0, 0, 100 * time.Millisecond, 0, 0, 300 * time.Millisecond, 0} {
			clk.Add(step)
			start := time.Now()
			d, err := s.Apply(ctx, "k", a, algo.Request{N: 1})
			if err != nil {
				t.Fatalf("%v: Apply %d: %v", a, i, err)
			}
			if !d.Allowed {
				continue // a denial need not write, so the TTL of the last write stands
			}
			writes++
			for _, k := range keys {
				pttl, err := c.PTTL(ctx, k).Result()
				if err != nil {
					t.Fatal(err)
				}
				elapsed := time.Since(start)
				lo := d.ResetAfter + distributed.DefaultClockTolerance - elapsed - time.Millisecond
				hi := d.ResetAfter + distributed.DefaultClockTolerance + time.Millisecond
				if pttl < lo || pttl > hi {
					t.Errorf("%v: after Apply %d (ResetAfter %v), PTTL %s = %v, want in [%v, %v]",
						a, i, d.ResetAfter, k, pttl, lo, hi)
				}
			}
		}
		if writes < 3 {
			t.Errorf("%v: only %d writes were checked", a, writes)
		}
	}
}

// TestKeyExpiresOnTheServer lets Redis expire keys for real: with the server's clock, a
// token bucket that refills in 50 ms and a sliding log with a 50 ms window set that TTL on
// every key of their state, and the keys are gone once it has passed. The test polls
// EXISTS in a bounded loop; nothing waits for a fixed time.
func TestKeyExpiresOnTheServer(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := ctxTimeout(t, 30*time.Second)
	for _, a := range []algo.Algorithm{
		algo.TokenBucket{Rate: 20, Burst: 1},
		algo.SlidingWindowLog{Limit: 1, Window: 50 * time.Millisecond},
	} {
		prefix := freshPrefix()
		s := teststore.Redis(t, c, distributed.WithPrefix(prefix))
		start := time.Now()
		d, err := s.Apply(ctx, "k", a, algo.Request{N: 1})
		if err != nil || !d.Allowed || d.ResetAfter != 50*time.Millisecond {
			t.Fatalf("%v: Apply = %+v, %v; want allowed with ResetAfter 50ms", a, d, err)
		}
		keys := redisKeys(prefix, "k", a)
		for _, key := range keys {
			pttl, err := c.PTTL(ctx, key).Result()
			if err != nil {
				t.Fatal(err)
			}
			// PTTL is negative for a missing key: only acceptable if 50 ms have passed.
			if pttl <= 0 && time.Since(start) < d.ResetAfter {
				t.Errorf("%v: PTTL %s = %v right after the grant, want > 0", a, key, pttl)
			}
		}
		for _, key := range keys {
			waitGone(ctx, t, c, key)
		}
	}
}

// waitGone polls until key no longer exists, failing the test when ctx ends first.
func waitGone(ctx context.Context, t *testing.T, c redis.Cmdable, key string) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		n, err := c.Exists(ctx, key).Result()
		if err != nil {
			t.Fatalf("EXISTS %s: %v", key, err)
		}
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("key %s never expired", key)
		case <-tick.C:
		}
	}
}
