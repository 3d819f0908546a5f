package distributed_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
)

// transportCalls runs one call of every method of s that reaches Redis, in order.
func transportCalls(ctx context.Context, t *testing.T, s *distributed.Store) {
	t.Helper()
	a := algo.TokenBucket{Rate: 10, Burst: 5}
	sem := algo.Semaphore{Permits: 2, LeaseTTL: time.Second}
	check := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	d, err := s.Apply(ctx, "k", a, algo.Request{N: 1})
	check("Apply", err)
	check("Refund", s.Refund(ctx, "k", a, 1, d.At))
	_, err = s.Peek(ctx, "k", a, algo.Request{N: 1})
	check("Peek", err)
	_, _, err = s.ApplyAll(ctx, "k", []algo.Algorithm{a, algo.FixedWindow{Limit: 5, Window: time.Second}}, algo.Request{N: 1})
	check("ApplyAll", err)
	check("Reset", s.Reset(ctx, "k", a))
	_, err = s.Acquire(ctx, "sem", sem, "tok", 0)
	check("Acquire", err)
	_, err = s.Renew(ctx, "sem", sem, "tok")
	check("Renew", err)
	_, err = s.Holders(ctx, "sem")
	check("Holders", err)
	_, err = s.Release(ctx, "sem", "tok")
	check("Release", err)
}

// transportOps is the number of script calls transportCalls makes.
const transportOps = 9

// TestTransportEveryCallFunctions: every method of the store sends its script as a Redis 7
// function (FCALL), each script's library loaded once; the semaphore, Reset and the
// composites of ApplyAll too, which went by EVALSHA on their own paths before.
func TestTransportEveryCallFunctions(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t).Client(t)
	hook := &countTrips{countCmds{n: map[string]int{}}}
	c.AddHook(hook)
	ctx := ctxTimeout(t, 30*time.Second)
	s := newStore(t, c)
	transportCalls(ctx, t, s)
	// First pass: each of the four scripts (token bucket, composite, reset, semaphore)
	// meets "Function not found" once and is loaded with its call.
	if got, want := hook.take(), map[string]int{"fcall": transportOps, "function+fcall": 4}; !reflect.DeepEqual(got, want) {
		t.Errorf("first pass sent %v, want %v", got, want)
	}
	transportCalls(ctx, t, s)
	if got, want := hook.take(), map[string]int{"fcall": transportOps}; !reflect.DeepEqual(got, want) {
		t.Errorf("second pass sent %v, want %v", got, want)
	}
}

// TestTransportEveryCallBatched: with WithBatching, every method of the store goes to
// Redis in a pipeline, none as a command of its own: Peek, Reset, ApplyAll and the
// semaphore are batched as Apply and Refund are.
func TestTransportEveryCallBatched(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	g := newGate(c)
	ctx := ctxTimeout(t, 30*time.Second)
	s := newStore(t, c, distributed.WithBatching(distributed.Batching{}))
	transportCalls(ctx, t, s) // loads the libraries
	g.reset()
	transportCalls(ctx, t, s)
	pipes, singles := g.log()
	want := make([][]string, transportOps)
	for i := range want {
		want[i] = []string{"fcall"}
	}
	if !reflect.DeepEqual(pipes, want) || len(singles) > 0 {
		t.Errorf("%d calls sent pipelines %v and single commands %v, want %v and none", transportOps, pipes, singles, want)
	}
}

// TestTransportEveryCallReplicaAck: with WithReplicaAck every method's script is followed
// by WAIT on its connection, the composite, Reset and the semaphore included.
func TestTransportEveryCallReplicaAck(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t).Client(t)
	hook := &countTrips{countCmds{n: map[string]int{}}}
	c.AddHook(hook)
	ctx := ctxTimeout(t, 30*time.Second)
	// No replica: WAIT 0 is satisfied at once, and still sent after every script.
	s0 := newStore(t, c, distributed.WithZeroReplicaAck())
	transportCalls(ctx, t, s0)
	hook.take()
	transportCalls(ctx, t, s0)
	if got, want := hook.take(), map[string]int{"fcall+wait": transportOps}; !reflect.DeepEqual(got, want) {
		t.Errorf("second pass sent %v, want %v", got, want)
	}
}
