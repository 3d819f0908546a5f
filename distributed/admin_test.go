package distributed_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/resetmark"
	"github.com/ratekit/limiter/store"
	"github.com/ratekit/limiter/store/storetest"
)

// adminStore is how this file makes its stores (one line to change if New's signature
// does): a store on c under prefix, closed when t ends.
func adminStore(t testing.TB, c redis.UniversalClient, prefix string) *distributed.Store {
	t.Helper()
	return newStore(t, c, distributed.WithPrefix(prefix))
}

// adminDiffAlgorithms are diffAlgorithms and the smooth limiters.
func adminDiffAlgorithms() []algo.Algorithm {
	return append(diffAlgorithms(),
		algo.SmoothBursty{Rate: 1e6 / 7},
		algo.SmoothBursty{Rate: math.Inf(1)},
		algo.SmoothWarmingUp{Rate: 10, Warmup: 250 * time.Millisecond, ColdFactor: 10},
	)
}

// TestAdminDifferential drives the local and the Redis store (a single node and a
// Cluster) with random sequences of Apply, Refund, Peek and Reset: every answer must be
// identical, each Peek must equal the Apply that follows it at the same instant, and the
// Admin part of the conformance suite runs on Redis too.
func TestAdminDifferential(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := redistest.WithoutExpiry(srv.Client(t)) // fake clocks against real TTLs
	t.Run("SingleNode", func(t *testing.T) {
		t.Parallel()
		storetest.Differential(t, localFactory, redisFactory(c), storetest.DiffOptions{
			Steps: 1500, Seed: 1414, Algorithms: adminDiffAlgorithms(), Admin: true,
		})
	})
	t.Run("EveryConfig", func(t *testing.T) {
		t.Parallel()
		storetest.Differential(t, localFactory, redisFactory(c), storetest.DiffOptions{Steps: 200, Seed: 14, Admin: true})
	})
	t.Run("Cluster", func(t *testing.T) {
		t.Parallel()
		cl := redistest.WithoutExpiry(redistest.StartCluster(t, 3).Client(t))
		storetest.Differential(t, localFactory, redisFactory(cl), storetest.DiffOptions{
			Steps: 500, Seed: 1415, Algorithms: adminDiffAlgorithms(), Admin: true,
		})
	})
}

// TestAdminBatched runs the differential through a store with WithBatching, whose peeks
// and resets share pipelines.
func TestAdminBatched(t *testing.T) {
	t.Parallel()
	c := redistest.WithoutExpiry(redistest.Start(t).Client(t))
	storetest.Differential(t, localFactory, batchedFactory(c), storetest.DiffOptions{
		Steps: 300, Seed: 1416, Algorithms: diffAlgorithms(), Admin: true,
	})
}

// TestPeekWritesNothing checks on a real Redis, with real TTLs, that a Peek neither
// creates a key nor touches one: same value, TTL not refreshed.
func TestPeekWritesNothing(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t).Client(t)
	ctx := context.Background()
	// Every algorithm at a slow config (the windows, aligned to the epoch, 1000 h long): the
	// keys' real TTLs cannot run out between the snapshots however loaded the machine is.
	for _, a := range []algo.Algorithm{
		algo.FixedWindow{Limit: 5, Window: 1000 * time.Hour},
		algo.SlidingWindowLog{Limit: 5, Window: time.Hour},
		algo.SlidingWindowCounter{Limit: 5, Window: 1000 * time.Hour},
		algo.TokenBucket{Rate: 0.01, Burst: 5},
		algo.LeakyBucket{Rate: 0.01, Capacity: 5},
		algo.GCRA{Rate: 0.01, Burst: 5},
		algo.SmoothBursty{Rate: 0.01},
		algo.SmoothWarmingUp{Rate: 0.01, Warmup: time.Hour},
	} {
		t.Run(a.Name(), func(t *testing.T) {
			t.Parallel()
			prefix := freshPrefix()
			s := adminStore(t, c, prefix)
			if _, err := s.Peek(ctx, "fresh", a, algo.Request{N: 1}); err != nil {
				t.Fatal(err)
			}
			if d, err := s.Apply(ctx, "used", a, algo.Request{N: 1}); err != nil || !d.Allowed {
				t.Fatalf("Apply: %+v, %v", d, err)
			}
			keys := storeKeys(t, c, prefix)
			if len(keys) == 0 {
				t.Fatal("Apply created no key")
			}
			for _, k := range keys {
				if strings.Contains(k, "{fresh}") {
					t.Fatalf("Peek created %s", k)
				}
			}
			before := snapshot(t, c, keys)
			for range 3 {
				if _, err := s.Peek(ctx, "used", a, algo.Request{N: 1}); err != nil {
					t.Fatal(err)
				}
			}
			after := snapshot(t, c, keys)
			for i, k := range keys {
				if after[i].dump != before[i].dump {
					t.Errorf("%s: Peek changed its value", k)
				}
				if after[i].ttl > before[i].ttl {
					t.Errorf("%s: PTTL %v before the peeks, %v after: refreshed", k, before[i].ttl, after[i].ttl)
				}
			}
		})
	}
}

// TestResetDeletesEveryKey checks that Reset deletes every Redis key of the rules' slots
// (the sliding log keeps two) and no other, and leaves one mark per rule (resetLua).
func TestResetDeletesEveryKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for name, c := range map[string]redis.UniversalClient{
		"SingleNode": redistest.Start(t).Client(t),
		"Cluster":    redistest.StartCluster(t, 3).Client(t),
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			prefix := freshPrefix()
			s := adminStore(t, c, prefix)
			// Slow configs: no key's real TTL can run out during the test, however loaded
			// the machine is (a 1/s bucket's key lives 1 s after one permit).
			log := algo.SlidingWindowLog{Limit: 3, Window: time.Hour}
			tb := algo.TokenBucket{Rate: 0.001, Burst: 3}
			fw := algo.FixedWindow{Limit: 3, Window: 1000 * time.Hour} // aligned to the epoch: no boundary near
			for _, a := range []algo.Algorithm{log, tb, fw} {
				for _, key := range []string{"k", "other"} {
					if _, err := s.Apply(ctx, key, a, algo.Request{N: 1}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if n := len(storeKeys(t, c, prefix)); n != 8 {
				t.Fatalf("%d keys before Reset, want 8", n)
			}
			if err := s.Reset(ctx, "k", log, tb); err != nil {
				t.Fatal(err)
			}
			var left, marks []string
			for _, k := range storeKeys(t, c, prefix) {
				if strings.HasSuffix(k, resetmark.Suffix) {
					marks = append(marks, k)
				} else {
					left = append(left, k)
				}
			}
			if len(left) != 5 {
				t.Fatalf("keys after Reset: %q, want the 4 of \"other\" and k's fixed window", left)
			}
			slices.Sort(marks)
			want := []string{prefix + "{k}:" + log.Slot() + resetmark.Suffix, prefix + "{k}:" + tb.Slot() + resetmark.Suffix}
			if !slices.Equal(marks, want) {
				t.Errorf("marks after Reset: %q, want %q", marks, want)
			}
			for _, k := range left {
				if strings.Contains(k, "{k}") && !strings.Contains(k, ":"+fw.Slot()) {
					t.Errorf("Reset left %s", k)
				}
			}
		})
	}
}

// TestAdminErrors checks what is specific to Redis: an algorithm without a Lua twin, and a
// key holding other data.
func TestAdminErrors(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t).Client(t)
	s := adminStore(t, c, "adm:")
	ctx := context.Background()
	if _, err := s.Peek(ctx, "k", plain{}, algo.Request{N: 1}); !errors.Is(err, algo.ErrInvalidConfig) {
		t.Errorf("Peek of an algorithm without a script: %v, want ErrInvalidConfig", err)
	}
	if err := s.Reset(ctx, "k", plain{}); !errors.Is(err, algo.ErrInvalidConfig) {
		t.Errorf("Reset of an algorithm without a script: %v, want ErrInvalidConfig", err)
	}
	tb := algo.TokenBucket{Rate: 1, Burst: 3}
	if err := c.Set(ctx, "adm:{k}:"+tb.Slot(), "x", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Peek(ctx, "k", tb, algo.Request{N: 1}); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Peek of a key holding a string: %v, want ErrUnavailable", err)
	}
	if err := s.Reset(ctx, "k", tb); err != nil { // DEL removes any type
		t.Errorf("Reset of a key holding a string: %v", err)
	}
}

// storeKeys returns the Redis keys under prefix, from every master.
func storeKeys(t *testing.T, c redis.UniversalClient, prefix string) []string {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var keys []string
	scan := func(ctx context.Context, n *redis.Client) error {
		ks, err := n.Keys(ctx, prefix+"*").Result()
		mu.Lock()
		keys = append(keys, ks...)
		mu.Unlock()
		return err
	}
	var err error
	if cc, ok := c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, scan)
	} else {
		err = scan(ctx, c.(*redis.Client))
	}
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

type keySnap struct {
	dump string
	ttl  time.Duration
}

func snapshot(t *testing.T, c redis.UniversalClient, keys []string) []keySnap {
	t.Helper()
	ctx := context.Background()
	out := make([]keySnap, len(keys))
	for i, k := range keys {
		d, err := c.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		out[i] = keySnap{dump: d, ttl: c.PTTL(ctx, k).Val()}
	}
	return out
}
