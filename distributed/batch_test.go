package distributed_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/store/storetest"
)

// TestBatchingSingleNode runs the conformance suite (without -race) and the differential
// runs against the local store on batching stores: batching must change no decision.
func TestBatchingSingleNode(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := redistest.WithoutExpiry(srv.Client(t)) // fake clocks against real TTLs
	t.Run("Conformance", func(t *testing.T) {
		if distributed.RaceDetector {
			// The suite's calls are mostly sequential, so on a batching store they take the
			// path of a lone call (a pipeline of one), which the differential runs below
			// cover; under the race detector the suite would add some 30 s to the package
			// for little. The concurrent tests of batching all run under -race.
			t.Skip("run without -race: the conformance suite on a batching store is skipped under the race detector")
		}
		t.Parallel()
		storetest.Run(t, batchedFactory(c))
	})
	t.Run("Differential", func(t *testing.T) {
		t.Parallel()
		storetest.Differential(t, localFactory, batchedFactory(c), storetest.DiffOptions{
			Steps: 2000, Seed: 20260102, Algorithms: diffAlgorithms(),
		})
	})
	t.Run("DifferentialEveryConfig", func(t *testing.T) {
		t.Parallel()
		storetest.Differential(t, localFactory, batchedFactory(c), storetest.DiffOptions{Steps: 200, Seed: 11})
	})
	t.Run("Exact", func(t *testing.T) {
		t.Parallel()
		// On c too: a client without the hook would cache the original scripts, which c's
		// EVALSHA would then run, PEXPIRE included.
		testBatchedExact(t, c)
	})
}

// TestBatchingCluster does the same on a three-master Cluster, where go-redis splits each
// pipeline by node, and first checks that a pipeline follows a slot that moved. The
// conformance suite is left to TestBatchingSingleNode and TestCluster (plain mode), to
// keep the package's test time in check (it would add some 25 s): what batching changes
// on a Cluster is the routing of pipelines, which the differential runs over every
// config, the concurrent exactness check and the NOSCRIPT and MOVED tests exercise.
func TestBatchingCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	// Not parallel: it moves a slot, which must not happen under the other subtests.
	t.Run("Moved", func(t *testing.T) { testBatchedMoved(t, cl) })
	c := redistest.WithoutExpiry(cl.Client(t))
	t.Run("Differential", func(t *testing.T) {
		t.Parallel()
		storetest.Differential(t, localFactory, batchedFactory(c), storetest.DiffOptions{
			Steps: 500, Seed: 5, Algorithms: diffAlgorithms(),
		})
	})
	t.Run("DifferentialEveryConfig", func(t *testing.T) {
		t.Parallel()
		storetest.Differential(t, localFactory, batchedFactory(c), storetest.DiffOptions{Steps: 200, Seed: 13})
	})
	t.Run("Exact", func(t *testing.T) {
		t.Parallel()
		testBatchedExact(t, c)
	})
	t.Run("ScriptFlush", func(t *testing.T) {
		t.Parallel()
		testBatchedFlushCluster(t, cl)
	})
}

// testBatchedExact races 64 goroutines for one key under each rule, with the clock
// frozen: exactly the limit is admitted, and the admitted decisions' Remaining values are
// limit-1 … 0, each once, so every script ran once and atomically.
func testBatchedExact(t *testing.T, c redis.UniversalClient) {
	const (
		goroutines = 64
		attempts   = 4 // 256 calls for a limit of 100
		limit      = 100
	)
	for _, a := range []algo.Algorithm{
		algo.FixedWindow{Limit: limit, Window: time.Hour},
		algo.TokenBucket{Rate: 1, Burst: limit},
		algo.SlidingWindowLog{Limit: limit, Window: time.Hour},
	} {
		t.Run(a.Name(), func(t *testing.T) {
			s := newStore(t, c, distributed.WithClientClock(fakeClock()),
				distributed.WithBatching(distributed.Batching{MaxBatch: 16}))
			ctx := ctxTimeout(t, 30*time.Second)
			var (
				wg        sync.WaitGroup
				mu        sync.Mutex
				remaining []int64
				denied    int
				errs      []error
			)
			start := make(chan struct{})
			for g := 0; g < goroutines; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					for i := 0; i < attempts; i++ {
						d, err := s.Apply(ctx, "shared", a, algo.Request{N: 1})
						mu.Lock()
						switch {
						case err != nil:
							errs = append(errs, err)
						case d.Allowed:
							remaining = append(remaining, d.Remaining)
						default:
							denied++
						}
						mu.Unlock()
					}
				}()
			}
			close(start)
			wg.Wait()
			if len(errs) > 0 {
				t.Fatalf("%d calls failed, the first with %v", len(errs), errs[0])
			}
			if got := len(remaining); got != limit || denied != goroutines*attempts-limit {
				t.Fatalf("admitted %d and denied %d of %d, want exactly %d admitted", got, denied, goroutines*attempts, limit)
			}
			slices.Sort(remaining)
			for i, r := range remaining {
				if r != int64(i) {
					t.Fatalf("sorted Remaining of the grants = %v, want 0 … %d each once", remaining, limit-1)
				}
			}
		})
	}
}

// TestBatchingCoalesces proves that batching happens, and only when it should: a lone
// caller sends one command per call, calls that queue behind a pipeline in flight go out
// together (split at MaxBatch), and free-running concurrency sends fewer pipelines than
// commands.
func TestBatchingCoalesces(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	g := newGate(c)
	s := newStore(t, c, distributed.WithClientClock(fakeClock()),
		distributed.WithBatching(distributed.Batching{MaxBatch: 8, MaxInFlight: 1}))
	ctx := ctxTimeout(t, 30*time.Second)
	a := counter{Limit: 1 << 40}
	if _, err := s.Apply(ctx, "warm", a, algo.Request{N: 1}); err != nil { // loads the script
		t.Fatal(err)
	}

	t.Run("LoneCaller", func(t *testing.T) {
		g.reset()
		for i := 0; i < 5; i++ {
			if _, err := s.Apply(ctx, "lone", a, algo.Request{N: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Refund(ctx, "lone", a, 1, 0); err != nil {
			t.Fatal(err)
		}
		pipes, singles := g.log()
		want := [][]string{{"evalsha"}, {"evalsha"}, {"evalsha"}, {"evalsha"}, {"evalsha"}, {"evalsha"}}
		if !reflect.DeepEqual(pipes, want) || len(singles) > 0 {
			t.Fatalf("6 sequential calls sent pipelines %v and single commands %v, want %v and none", pipes, singles, want)
		}
	})

	t.Run("Queued", func(t *testing.T) {
		g.reset()
		g.hold()
		defer g.open()
		var wg sync.WaitGroup
		call := func(key string) {
			defer wg.Done()
			if _, err := s.Apply(ctx, key, a, algo.Request{N: 1}); err != nil {
				t.Error(err)
			}
		}
		wg.Add(1)
		go call("first")
		g.wait(t) // the only flusher is busy with the first call
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go call(fmt.Sprint("q", i))
		}
		waitQueued(t, s, 20)
		g.open()
		wg.Wait()
		if got, want := g.sizes(), []int{1, 8, 8, 4}; !slices.Equal(got, want) {
			t.Fatalf("pipeline sizes %v, want %v: 20 calls queued behind one in flight, MaxBatch 8", got, want)
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		g.reset()
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := 0; i < 64; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for j := 0; j < 10; j++ {
					if _, err := s.Apply(ctx, fmt.Sprint("c", i), a, algo.Request{N: 1}); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		close(start)
		wg.Wait()
		sizes := g.sizes()
		total := 0
		for _, n := range sizes {
			total += n
			if n > 8 {
				t.Errorf("a pipeline of %d commands, beyond MaxBatch 8", n)
			}
		}
		if total != 640 || len(sizes) >= total {
			t.Fatalf("640 calls from 64 goroutines sent %d commands in %d pipelines, want 640 in fewer", total, len(sizes))
		}
		t.Logf("640 calls in %d pipelines (%.1f commands each)", len(sizes), float64(total)/float64(len(sizes)))
	})
}

// TestBatchingLimits checks that out-of-range settings are clamped, never a panic.
func TestBatchingLimits(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	for _, tc := range []struct {
		in                  distributed.Batching
		maxBatch, maxFlight int
	}{
		{distributed.Batching{}, distributed.DefaultMaxBatch, distributed.DefaultMaxInFlight},
		{distributed.Batching{MaxBatch: 1, MaxInFlight: 1}, 1, 1},
		{distributed.Batching{MaxBatch: 1 << 40, MaxInFlight: 1 << 40}, distributed.MaxBatchLimit, distributed.MaxInFlightLimit},
	} {
		s := newStore(t, c, distributed.WithBatching(tc.in))
		if mb, mf := distributed.BatchLimits(s); mb != tc.maxBatch || mf != tc.maxFlight {
			t.Errorf("WithBatching(%+v) runs with MaxBatch %d, MaxInFlight %d; want %d, %d", tc.in, mb, mf, tc.maxBatch, tc.maxFlight)
		}
		if _, err := s.Apply(context.Background(), "k", algo.TokenBucket{Rate: 1, Burst: 1}, algo.Request{N: 1}); err != nil {
			t.Errorf("WithBatching(%+v): Apply: %v", tc.in, err)
		}
		_ = s.Close()
	}
}

// testBatchedMoved moves the slot of a key to another master behind the client's back
// (the standard IMPORTING / MIGRATING / NODE sequence, with no keys to migrate): the
// client's slot map is then stale, the pipeline meets MOVED, and go-redis re-sends the
// command to the new owner, where the state is written.
func testBatchedMoved(t *testing.T, cl *redistest.Cluster) {
	ctx := ctxTimeout(t, 30*time.Second)
	nodes := cl.Nodes()
	direct := make([]*redis.Client, len(nodes))
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		direct[i] = n.Client(t)
		id, err := direct[i].ClusterMyID(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	var moved movedLog
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cl.Addrs(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = cc.Close() })
	cc.OnNewNode(func(n *redis.Client) { n.AddHook(&moved) })
	prefix := freshPrefix()
	s := teststore.Redis(t, cc, distributed.WithTimeout(testTimeout), distributed.WithPrefix(prefix), distributed.WithClientClock(fakeClock()),
		distributed.WithBatching(distributed.Batching{}))
	t.Cleanup(func() { _ = s.Close() })
	a := counter{Limit: 10}
	if _, err := s.Apply(ctx, "warm", a, algo.Request{N: 1}); err != nil { // loads the slot map
		t.Fatal(err)
	}

	const key = "moving"
	slot, err := direct[0].ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	per := int64(16384 / len(nodes))
	src := int(min(slot/per, int64(len(nodes)-1))) // node i owns the i-th range
	dst := (src + 1) % len(nodes)
	steps := []struct {
		node int
		args []any
	}{
		{dst, []any{"cluster", "setslot", slot, "importing", ids[src]}},
		{src, []any{"cluster", "setslot", slot, "migrating", ids[dst]}},
		{dst, []any{"cluster", "setslot", slot, "node", ids[dst]}},
		{src, []any{"cluster", "setslot", slot, "node", ids[dst]}},
	}
	for i := range nodes {
		if i != src && i != dst {
			steps = append(steps, struct {
				node int
				args []any
			}{i, []any{"cluster", "setslot", slot, "node", ids[dst]}})
		}
	}
	for _, st := range steps {
		if err := direct[st.node].Do(ctx, st.args...).Err(); err != nil {
			t.Fatalf("%v on node %d: %v", st.args, st.node, err)
		}
	}

	release := distributed.Busy(s) // the Apply below goes in a pipeline, not on its own
	d, err := s.Apply(ctx, key, a, algo.Request{N: 1})
	release()
	if err != nil || !d.Allowed || d.Remaining != 9 {
		t.Fatalf("Apply on a moved slot = %+v, %v; want allowed, Remaining 9", d, err)
	}
	stateKey := prefix + "{" + key + "}:ctr"
	if n, err := direct[dst].Exists(ctx, stateKey).Result(); err != nil || n != 1 {
		t.Errorf("EXISTS %s on the new owner = %d, %v; want 1", stateKey, n, err)
	}
	if n, err := direct[src].Exists(ctx, stateKey).Result(); err == nil && n != 0 {
		t.Errorf("EXISTS %s on the old owner = %d, want 0", stateKey, n)
	}
	if moved.count() == 0 {
		t.Error("no pipeline met MOVED: the client's slot map was not stale, the test proved nothing")
	}
}

// movedLog is a node hook counting the pipeline commands answered MOVED.
type movedLog struct {
	mu sync.Mutex
	n  int
}

func (m *movedLog) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n
}

func (m *movedLog) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (m *movedLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (m *movedLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		for _, c := range cmds {
			if e := c.Err(); e != nil && strings.HasPrefix(e.Error(), "MOVED ") {
				m.mu.Lock()
				m.n++
				m.mu.Unlock()
			}
		}
		return err
	}
}
