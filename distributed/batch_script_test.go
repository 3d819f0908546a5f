package distributed_test

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
)

// TestBatchingScriptFlush empties the script cache under a batch and then under traffic:
// no caller may see an error. On one server a batch that meets NOSCRIPT is re-sent as one
// EVAL followed by EVALSHA of the same script, so the source travels once.
func TestBatchingScriptFlush(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	other := srv.Client(t)
	s, g, ctx := heldStore(t, srv)
	a := counter{Limit: 1 << 40}

	t.Run("Batch", func(t *testing.T) {
		g.reset()
		g.hold()
		var wg sync.WaitGroup
		for i := 0; i < 21; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := s.Apply(ctx, fmt.Sprint("k", i), a, algo.Request{N: 1}); err != nil {
					t.Error(err)
				}
			}()
			if i == 0 {
				g.wait(t) // the first call is held; the others queue behind it
			}
		}
		waitQueued(t, s, 20)
		g.let()   // the first call goes, with the script cached
		g.wait(t) // the twenty others reach the gate as one pipeline
		if err := other.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		g.open()
		wg.Wait()
		pipes, _ := g.log()
		want := [][]string{{"evalsha"}, slices.Repeat([]string{"evalsha"}, 20), append([]string{"eval"}, slices.Repeat([]string{"evalsha"}, 19)...)}
		if !slices.EqualFunc(pipes, want, slices.Equal) {
			t.Errorf("pipelines %v\nwant %v", pipes, want)
		}
	})

	t.Run("Traffic", func(t *testing.T) {
		g.reset()
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var failed atomic.Int64
		var firstErr atomic.Value
		for i := 0; i < 16; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if _, err := s.Apply(ctx, fmt.Sprint("t", i), a, algo.Request{N: 1}); err != nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, err)
					}
				}
			}()
		}
		const flushes = 5
		for i := 0; i < flushes; i++ {
			if err := other.ScriptFlush(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			// Some pipeline must reload the script before this call can run.
			if _, err := s.Apply(ctx, "main", a, algo.Request{N: 1}); err != nil {
				t.Errorf("after SCRIPT FLUSH %d: %v", i, err)
			}
		}
		close(stop)
		wg.Wait()
		if n := failed.Load(); n > 0 {
			t.Errorf("%d calls failed across SCRIPT FLUSH, the first with %v", n, firstErr.Load())
		}
		pipes, singles := g.log()
		evals := 0
		for _, p := range pipes {
			evals += count(p, "eval")
		}
		if evals < flushes || len(singles) > 0 {
			t.Errorf("%d EVAL sent for %d SCRIPT FLUSH (want at least one each) and single commands %v (want none)", evals, flushes, singles)
		}
		t.Logf("%d pipelines, %d of them reloading", len(pipes), evals)
	})
}

// testBatchedFlushCluster empties every node's script cache under a batch spread over
// the nodes: the first reload round caches the script on one node only, the commands
// routed elsewhere meet NOSCRIPT again and go as EVAL in a second round; nobody sees an
// error.
func testBatchedFlushCluster(t *testing.T, cl *redistest.Cluster) {
	cc := cl.Client(t)
	g := newGate(cc)
	s := newStore(t, cc, distributed.WithClientClock(fakeClock()),
		distributed.WithBatching(distributed.Batching{MaxInFlight: 1}))
	ctx := ctxTimeout(t, 30*time.Second)
	a := counter{Limit: 1 << 40}
	if err := cc.ScriptLoad(ctx, counterScript.Source).Err(); err != nil { // on every node
		t.Fatal(err)
	}
	t.Cleanup(g.open)
	g.hold()
	var wg sync.WaitGroup
	for i := 0; i < 31; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if d, err := s.Apply(ctx, fmt.Sprint("k", i), a, algo.Request{N: 1}); err != nil || !d.Allowed {
				t.Errorf("Apply across SCRIPT FLUSH: %+v, %v", d, err)
			}
		}()
		if i == 0 {
			g.wait(t)
		}
	}
	waitQueued(t, s, 30)
	g.reset()
	g.let()
	g.wait(t) // the thirty others, spread over the three masters
	if err := cc.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	g.open()
	wg.Wait()
	pipes, _ := g.log()
	if len(pipes) != 3 || len(pipes[0]) != 30 || count(pipes[1], "eval") != 1 || count(pipes[2], "eval") != len(pipes[2]) {
		t.Errorf("pipelines %v\nwant: the thirty; one EVAL and EVALSHAs; those routed to other nodes as EVAL", pipes)
	}
}

func count(names []string, name string) int {
	n := 0
	for _, s := range names {
		if s == name {
			n++
		}
	}
	return n
}
