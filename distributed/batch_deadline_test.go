package distributed_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/redistest"
)

// TestBatchedCallKeepsItsDeadline: a call's deadline is set once (Store.bound) and a
// pipeline runs until the latest deadline of the calls it carries, so a call batched with
// one whose caller's deadline comes first is not cut short by it: the early caller leaves
// at its deadline, the other is answered.
func TestBatchedCallKeepsItsDeadline(t *testing.T) {
	t.Parallel()
	s, g, ctx := heldStore(t, redistest.Start(t))
	a := counter{Limit: 100}
	apply := func(ctx context.Context, key string, out chan<- error) {
		_, err := s.Apply(ctx, key, a, algo.Request{N: 1})
		out <- err
	}
	g.hold()
	first, early, late := make(chan error, 1), make(chan error, 1), make(chan error, 1)
	go apply(ctx, "first", first)
	g.wait(t) // the first call goes alone and is held; the next two queue behind it
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	go apply(short, "early", early)
	go apply(ctx, "late", late)
	waitQueued(t, s, 2)
	g.let()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if names := g.wait(t); len(names) != 2 {
		t.Fatalf("pipeline %v, want the two queued calls", names)
	}
	// The pipeline is held past the early caller's deadline.
	if err := <-early; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("early caller: %v, want its deadline", err)
	}
	g.open()
	if err := <-late; err != nil {
		t.Errorf("the call batched with it: %v, want an answer (its own deadline has not passed)", err)
	}
}
