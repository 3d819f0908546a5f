package distributed_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/store"
	"github.com/ratekit/limiter/store/storetest"
)

// batchedFactory makes batching stores on one shared client, isolated by a fresh prefix
// each. Small batches and two flushers, so that the suites' concurrent parts do batch.
func batchedFactory(c redis.UniversalClient) storetest.Factory {
	return func(t *testing.T, clk *clockx.Fake) store.Store {
		s := teststore.Redis(t, c, distributed.WithTimeout(testTimeout), distributed.WithPrefix(freshPrefix()), distributed.WithClientClock(clk),
			distributed.WithBatching(distributed.Batching{MaxBatch: 16, MaxInFlight: 2}))
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
}

// gate is a go-redis hook that logs every round trip of its client and, while held, stops
// each at the door until the test lets it through. A round trip is a pipeline, or a script
// command sent on its own (a lone call, which the batcher sends as a store without
// batching does), logged and held as a pipeline of one; other commands sent on their own
// (FUNCTION LOAD, HELLO...) are logged apart and never held. It makes
// the batching tests deterministic: with MaxInFlight 1, callers that arrive while the
// only pipeline is held must queue, and the test decides when the next one goes.
type gate struct {
	entered chan []string // the command names of each pipeline held at the door

	mu      sync.Mutex
	holding bool
	pass    chan struct{} // one token lets one held pipeline through
	opened  chan struct{} // closed by open: every held pipeline goes
	pipes   [][]string    // command names of every round trip, in order
	singles []string      // names of the other commands sent on their own
}

func newGate(c redis.UniversalClient) *gate {
	g := &gate{entered: make(chan []string, 64), pass: make(chan struct{})}
	c.AddHook(g)
	return g
}

// hold makes the pipelines that arrive from now on wait at the door.
func (g *gate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.holding, g.opened = true, make(chan struct{})
}

// open lets every held pipeline go and stops holding.
func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.holding {
		g.holding = false
		close(g.opened)
	}
}

// let lets one held pipeline through.
func (g *gate) let() { g.pass <- struct{}{} }

// wait returns the command names of the next pipeline held at the door.
func (g *gate) wait(t *testing.T) []string {
	t.Helper()
	select {
	case names := <-g.entered:
		return names
	case <-time.After(20 * time.Second):
		t.Fatal("no pipeline reached the gate")
		return nil
	}
}

// reset forgets the log.
func (g *gate) reset() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.pipes, g.singles = nil, nil
}

// log returns the command names of the pipelines and of the single commands so far.
func (g *gate) log() (pipes [][]string, singles []string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([][]string(nil), g.pipes...), append([]string(nil), g.singles...)
}

// sizes returns the number of commands of each pipeline logged.
func (g *gate) sizes() []int {
	pipes, _ := g.log()
	n := make([]int, len(pipes))
	for i, p := range pipes {
		n[i] = len(p)
	}
	return n
}

func (g *gate) DialHook(next redis.DialHook) redis.DialHook { return next }

func (g *gate) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		name := strings.ToLower(cmd.Name())
		switch name {
		case "fcall", "evalsha", "eval":
			g.door(ctx, []string{name})
		default:
			g.mu.Lock()
			g.singles = append(g.singles, name)
			g.mu.Unlock()
		}
		return next(ctx, cmd)
	}
}

func (g *gate) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		names := make([]string, len(cmds))
		for i, c := range cmds {
			names[i] = strings.ToLower(c.Name())
		}
		g.door(ctx, names)
		return next(ctx, cmds)
	}
}

// door logs a round trip of the commands names and, while the gate holds, waits until
// the test lets it through (or ctx ends: the client then fails it with ctx's error).
func (g *gate) door(ctx context.Context, names []string) {
	g.mu.Lock()
	g.pipes = append(g.pipes, names)
	holding, opened := g.holding, g.opened
	g.mu.Unlock()
	if holding {
		g.entered <- names
		select {
		case <-g.pass:
		case <-opened:
		case <-ctx.Done():
		}
	}
}

// waitQueued polls until n calls wait in s's batching queue. Polling a condition, not
// sleeping for a guessed time: callers that queue take microseconds, a loaded machine
// may take longer, and the bound only matters when something is broken.
func waitQueued(t *testing.T, s *distributed.Store, n int) {
	t.Helper()
	waitFor(t, func() bool { return distributed.QueuedCalls(s) >= n },
		func() string {
			return "calls queued: " + strconv.Itoa(distributed.QueuedCalls(s)) + ", want " + strconv.Itoa(n)
		})
}

// waitFor polls cond every millisecond until it holds, failing the test after 20 s.
func waitFor(t *testing.T, cond func() bool, what func() string) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	limit := time.After(20 * time.Second)
	for !cond() {
		select {
		case <-tick.C:
		case <-limit:
			t.Fatalf("condition not reached after 20 s: %s", what())
		}
	}
}
