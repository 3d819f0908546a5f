package distributed_test

import (
	"context"
	"reflect"
	"strings"
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
