package distributed_test

import (
	"context"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
)

// TestFunctionsOneRoundTrip counts the commands of the FCALL path: one FCALL per decision
// (Apply, Refund and Peek alike), plus, where the server lacks the library (first call,
// FUNCTION FLUSH, restart), the FCALL it refused, then FUNCTION LOAD and the FCALL again
// in one pipeline: two round trips, as EVALSHA then EVAL after NOSCRIPT.
func TestFunctionsOneRoundTrip(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	hook := &countTrips{countCmds{n: map[string]int{}}}
	c.AddHook(hook)
	ctx := ctxTimeout(t, 30*time.Second)
	s := newStore(t, c, distributed.WithClientClock(fakeClock()))
	a := algo.GCRA{Rate: 10, Burst: 100}

	check := func(what string, calls int, want map[string]int) {
		t.Helper()
		for i := 0; i < calls; i++ {
			d, err := s.Apply(ctx, "k", a, algo.Request{N: 1})
			if err != nil || !d.Allowed {
				t.Fatalf("%s: Apply = %+v, %v; want allowed", what, d, err)
			}
		}
		if got := hook.take(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %d decisions sent %v, want %v", what, calls, got, want)
		}
	}
	check("first call", 1, map[string]int{"fcall": 1, "function+fcall": 1})
	check("later calls", 50, map[string]int{"fcall": 50})
	if _, err := s.Peek(ctx, "k", a, algo.Request{N: 1}); err != nil {
		t.Fatal(err)
	}
	if got := hook.take(); !reflect.DeepEqual(got, map[string]int{"fcall": 1}) {
		t.Errorf("Peek sent %v, want one FCALL", got)
	}
	if err := c.FunctionFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	hook.take()
	check("after FUNCTION FLUSH", 2, map[string]int{"fcall": 2, "function+fcall": 1})
	if distributed.EvalOnly(s) {
		t.Error("the store fell back to EVALSHA on a server with functions")
	}
	// The decisions carried on across the flush: 53 permits taken of 100 (at 10/s, on a
	// fake clock that did not move).
	if d, err := s.Peek(ctx, "k", a, algo.Request{N: 1}); err != nil || d.Remaining != 47 {
		t.Errorf("Peek after 53 grants = %+v, %v; want Remaining 47", d, err)
	}
}

// TestFunctionsFallBackToEval: on a server without FCALL (renamed away here, as unknown as
// on Redis 6), the first call falls back to EVALSHA and the store stays there.
func TestFunctionsFallBackToEval(t *testing.T) {
	t.Parallel()
	srv := redistest.StartWithFlags(t, "--rename-command", "FCALL", "")
	c := srv.Client(t)
	hook := &countTrips{countCmds{n: map[string]int{}}}
	c.AddHook(hook)
	ctx := ctxTimeout(t, 30*time.Second)
	s := newStore(t, c, distributed.WithClientClock(fakeClock()))
	a := algo.TokenBucket{Rate: 1, Burst: 3}
	for i := 0; i < 4; i++ {
		d, err := s.Apply(ctx, "k", a, algo.Request{N: 1})
		if err != nil {
			t.Fatalf("Apply %d: %v", i, err)
		}
		if want := i < 3; d.Allowed != want || (want && d.Remaining != int64(2-i)) {
			t.Fatalf("Apply %d = %+v, want allowed %v", i, d, want)
		}
	}
	if !distributed.EvalOnly(s) {
		t.Error("the store did not fall back to EVALSHA")
	}
	want := map[string]int{"fcall": 1, "evalsha": 4, "eval": 1}
	if got := hook.take(); !reflect.DeepEqual(got, want) {
		t.Errorf("4 decisions sent %v, want %v", got, want)
	}
}

// countTrips is countCmds that also counts each pipeline, as its command names joined by
// "+": one entry per round trip (a connection's set-up left out).
type countTrips struct{ countCmds }

func (h *countTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var names []string
		for _, c := range cmds {
			if name := c.Name(); name != "hello" && name != "client" { // connection set-up
				names = append(names, name)
			}
		}
		if len(names) == 0 {
			return next(ctx, cmds)
		}
		h.mu.Lock()
		h.n[strings.Join(names, "+")]++
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}

// TestFunctionLoadFollowsAMovedSlot: a key's slot moves (or is being moved) to a node without
// the library while the client's slot map still names the old owner (go-redis reloads the map
// in the background, so under load it stays stale for several sends; here it is frozen). The
// FCALL follows MOVED (or ASK) and meets "Function not found"; the library then has to reach
// the new owner, which loading it on the owner the stale map names never does. Each call must
// succeed, alone and batched. Without sendOnNode's own following of the redirection, the
// call ran out of rounds and returned MOVED as an outage.
func TestFunctionLoadFollowsAMovedSlot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name             string
		batched, migrate bool
	}{
		{"Moved", false, false}, {"MovedBatched", true, false},
		{"Ask", false, true}, {"AskBatched", true, true},
	} {
		batched := tc.batched
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxTimeout(t, 30*time.Second)
			cl := redistest.StartCluster(t, 3)
			nodes := cl.Nodes()
			direct := make([]*redis.Client, len(nodes))
			for i, n := range nodes {
				direct[i] = n.Client(t)
			}
			var frozen atomic.Pointer[[]redis.ClusterSlot]
			cc := redis.NewClusterClient(&redis.ClusterOptions{
				Addrs: cl.Addrs(), ContextTimeoutEnabled: true,
				ClusterSlots: func(ctx context.Context) ([]redis.ClusterSlot, error) {
					if f := frozen.Load(); f != nil {
						return *f, nil
					}
					return direct[0].ClusterSlots(ctx).Result()
				},
			})
			t.Cleanup(func() { _ = cc.Close() })
			opts := []distributed.Option{distributed.WithClientClock(fakeClock())}
			if batched {
				opts = append(opts, distributed.WithBatching(distributed.Batching{}))
			}
			s := newStore(t, cc, opts...)
			a := algo.TokenBucket{Rate: 1, Burst: 10}
			const key = "moving"
			if _, err := s.Apply(ctx, "warm", a, algo.Request{N: 1}); err != nil { // loads the slot map
				t.Fatal(err)
			}
			slots, err := direct[0].ClusterSlots(ctx).Result()
			if err != nil {
				t.Fatal(err)
			}
			frozen.Store(&slots)
			moveSlotOf(ctx, t, direct, key, tc.migrate)
			for _, d := range direct {
				if err := d.FunctionFlush(ctx).Err(); err != nil { // the new owner lacks the library
					t.Fatal(err)
				}
			}
			release := func() {}
			if batched {
				release = distributed.Busy(s)
			}
			d, err := s.Apply(ctx, key, a, algo.Request{N: 1})
			release()
			if err != nil || !d.Allowed || d.Remaining != 9 {
				t.Fatalf("Apply on a moved slot, stale slot map = %+v, %v; want allowed, Remaining 9", d, err)
			}
		})
	}
}

// moveSlotOf moves key's slot from its owner to the next node, telling every node, as
// redis-cli --cluster reshard does minus the key migration; with migrating, it stops half
// way (the owner answers ASK for keys it does not hold).
func moveSlotOf(ctx context.Context, t *testing.T, direct []*redis.Client, key string, migrating bool) {
	t.Helper()
	ids := make([]string, len(direct))
	for i, d := range direct {
		id, err := d.ClusterMyID(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = id
	}
	slot, err := direct[0].ClusterKeySlot(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	src := -1
	slots, err := direct[0].ClusterSlots(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range slots {
		if int64(r.Start) <= slot && slot <= int64(r.End) {
			for i, id := range ids {
				if len(r.Nodes) > 0 && r.Nodes[0].ID == id {
					src = i
				}
			}
		}
	}
	if src < 0 {
		t.Fatalf("no owner found for slot %d", slot)
	}
	dst := (src + 1) % len(direct)
	steps := [][]any{
		{dst, "importing", ids[src]},
		{src, "migrating", ids[dst]},
	}
	if !migrating {
		steps = append(steps, []any{dst, "node", ids[dst]}, []any{src, "node", ids[dst]})
	}
	for i := range direct {
		if i != src && i != dst && !migrating {
			steps = append(steps, []any{i, "node", ids[dst]})
		}
	}
	for _, st := range steps {
		args := append([]any{"cluster", "setslot", slot}, st[1:]...)
		if err := direct[st[0].(int)].Do(ctx, args...).Err(); err != nil {
			t.Fatalf("%v on node %d: %v", args, st[0], err)
		}
	}
}
