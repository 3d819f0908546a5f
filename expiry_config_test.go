package limiter_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// The expiry rule both stores follow: a state expires at the instant it would be fresh,
// computed at its last write under the config of that write (Redis: the PEXPIRE set then);
// after that the key starts fresh under the current config.
//
// Redis expires keys in real time while these tests run on a fake clock, so the Redis side
// runs on a client whose scripts set no TTL (redistest.WithoutExpiry) and the test plays
// Redis' expiry on the fake timeline: after every grant (a write) it records the deadline
// now + ResetAfter rounded up to whole ms (the PEXPIRE the scripts set, which algo's Lua
// differential test checks against ResetAfter), and deletes the key once the fake clock
// reaches it. Denials write nothing and leave the deadline.

// expiringRedis is a Redis store whose keys expire on the fake clock, as described above.
type expiringRedis struct {
	store.Store
	c        *redis.Client
	clk      *clockx.Fake
	prefix   string
	deadline time.Time // zero: no key
}

func (s *expiringRedis) expire(ctx context.Context) error {
	if s.deadline.IsZero() || s.clk.Now().Before(s.deadline) {
		return nil
	}
	s.deadline = time.Time{}
	keys, err := s.c.Keys(ctx, s.prefix+"*").Result()
	if err != nil || len(keys) == 0 {
		return err
	}
	return s.c.Del(ctx, keys...).Err()
}

func (s *expiringRedis) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	if err := s.expire(ctx); err != nil {
		return algo.Decision{}, err
	}
	d, err := s.Store.Apply(ctx, key, a, req)
	if err == nil && d.Allowed {
		ms := max(2, (d.ResetAfter+time.Millisecond-1)/time.Millisecond) // prelude.lua's keep
		s.deadline = s.clk.Now().Add(ms * time.Millisecond)
	}
	return d, err
}

var expiryPrefixes int

// TestConfigChangeAfterExpiry: drain a bucket, change its config (same slot) to a much
// larger one, and come back after the state's fresh instant under the old config: both
// stores start the key fresh under the new config. Before that instant both keep the state.
func TestConfigChangeAfterExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var rc *redis.Client
	if !testing.Short() {
		rc = redistest.WithoutExpiry(redistest.Start(t).Client(t))
	}
	for _, tc := range []struct {
		from, to algo.Algorithm
		empty    time.Duration // when the drained state is fresh under from
		before   int64         // admitted at empty - 100ms under to
		after    int64         // admitted at empty + 100ms under to
	}{
		// The case: Redis admitted 1000 and the local store 1.
		{algo.TokenBucket{Rate: 10, Burst: 10}, algo.TokenBucket{Rate: 1, Burst: 1000}, time.Second, 0, 1000},
		// The leaky bucket keeps its level (the queue): a larger bucket has room at once.
		{algo.LeakyBucket{Rate: 10, Capacity: 10}, algo.LeakyBucket{Rate: 1, Capacity: 1000}, time.Second, 990, 1000},
		// GCRA keeps the permits available (0) across the change, as the token bucket.
		{algo.GCRA{Rate: 10, Burst: 10}, algo.GCRA{Rate: 1, Burst: 1000}, time.Second, 0, 1000},
	} {
		stores := map[string]func(clk *clockx.Fake) store.Store{
			"local": func(clk *clockx.Fake) store.Store {
				return teststore.Local(t, local.WithClock(clk), local.WithSweepInterval(0))
			},
		}
		if rc != nil {
			stores["redis"] = func(clk *clockx.Fake) store.Store {
				expiryPrefixes++
				p := fmt.Sprintf("expiry-%d:", expiryPrefixes)
				return &expiringRedis{Store: teststore.Redis(t, rc, distributed.WithClientClock(clk), distributed.WithPrefix(p)),
					c: rc, clk: clk, prefix: p}
			}
		}
		for name, mk := range stores {
			for _, at := range []time.Duration{tc.empty - 100*time.Millisecond, tc.empty + 100*time.Millisecond} {
				clk := clockx.NewFake(start)
				st := mk(clk)
				l, err := limiter.New(st, tc.from, limiter.WithClock(clk))
				if err != nil {
					t.Fatal(err)
				}
				if d, err := l.AllowN(ctx, "k", limitOf(tc.from)); err != nil || !d.Allowed {
					t.Fatalf("%s %v: draining: %+v, %v", name, tc.from, d, err)
				}
				if err := l.SetAlgorithm(tc.to); err != nil {
					t.Fatal(err)
				}
				clk.Add(at)
				var got int64
				for ; got <= limitOf(tc.to); got++ {
					d, err := l.Allow(ctx, "k")
					if err != nil {
						t.Fatal(err)
					}
					if !d.Allowed {
						break
					}
				}
				want := tc.before
				if at > tc.empty {
					want = tc.after
				}
				if got != want {
					t.Errorf("%s: %v drained, then %v: %d admitted at +%v, want %d", name, tc.from, tc.to, got, at, want)
				}
			}
		}
	}
}

// limitOf is the most a rule grants at once: its Quota's Limit.
func limitOf(a algo.Algorithm) int64 {
	q, ok := algo.QuotaOf(a)
	if !ok {
		panic(fmt.Sprintf("limitOf: %T has no Quota", a))
	}
	return q.Limit
}
