package distributed

import (
	"context"
	"errors"
	"testing"
	"time"
)

type ctxKey struct{}

func TestDeadlinesBound(t *testing.T) {
	const timeout = 640 * time.Millisecond
	ds := newDeadlines(timeout)
	now := time.Now()

	t.Run("Background", func(t *testing.T) {
		ctx, cancel := ds.bound(context.Background(), now)
		if cancel != nil {
			t.Error("a shared deadline has nothing to release")
		}
		dl, ok := ctx.Deadline()
		if want := now.Add(timeout); !ok || dl.After(want) || !dl.After(want.Add(-ds.grain)) {
			t.Errorf("deadline %v, %v; want in (%v, %v]", dl, ok, want.Add(-ds.grain), want)
		}
		if ctx.Err() != nil {
			t.Errorf("Err before the deadline: %v", ctx.Err())
		}
	})
	t.Run("Shared", func(t *testing.T) {
		a, _ := ds.bound(context.Background(), now)
		b, _ := ds.bound(context.TODO(), now.Add(ds.grain/2))
		if a != b {
			t.Error("two calls half a grain apart have deadlines of their own")
		}
		c, _ := ds.bound(context.Background(), now.Add(ds.grain))
		if c == a {
			t.Error("a call a grain later shares a deadline a grain before its own")
		}
		// A call that starts earlier than the shared deadline allows gets one of its own.
		d, _ := ds.bound(context.Background(), now.Add(-time.Millisecond))
		if dl, _ := d.Deadline(); dl.After(now.Add(timeout - time.Millisecond)) {
			t.Errorf("deadline %v past the call's own", dl)
		}
	})
	t.Run("EarlierCallerDeadline", func(t *testing.T) {
		parent, cancel := context.WithTimeout(context.Background(), time.Millisecond)
		defer cancel()
		ctx, release := ds.bound(parent, time.Now())
		if ctx != parent || release != nil {
			t.Error("a caller deadline before the store's is not used as it is")
		}
	})
	t.Run("Values", func(t *testing.T) {
		parent := context.WithValue(context.Background(), ctxKey{}, "span")
		ctx, cancel := ds.bound(parent, now)
		if cancel != nil {
			t.Error("cancel for a context that is never cancelled")
		}
		if got := ctx.Value(ctxKey{}); got != "span" {
			t.Errorf("Value = %v, want the caller's", got)
		}
		if _, ok := ctx.Deadline(); !ok || ctx.Done() == nil {
			t.Error("no deadline")
		}
	})
	t.Run("Cancellable", func(t *testing.T) {
		parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, 1))
		ctx, cancel := ds.bound(parent, now)
		if cancel == nil {
			t.Fatal("no cancel for a context of its own")
		}
		defer cancel()
		if _, ok := ctx.Deadline(); !ok {
			t.Error("no deadline")
		}
		cancelParent()
		<-ctx.Done()
		if !errors.Is(ctx.Err(), context.Canceled) {
			t.Errorf("Err after the caller cancelled: %v", ctx.Err())
		}
	})
}

func TestDeadlineExpires(t *testing.T) {
	ds := newDeadlines(time.Millisecond)
	for _, parent := range []context.Context{context.Background(), context.WithValue(context.Background(), ctxKey{}, 1)} {
		ctx, _ := ds.bound(parent, time.Now())
		<-ctx.Done() // closed by the deadline's timer
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Errorf("Err after the deadline: %v", ctx.Err())
		}
	}
}

// TestDeadlinesAllocs: bounding a call costs no allocation for a caller context that
// carries nothing, and one for a context with values; context.WithTimeout cost five.
func TestDeadlinesAllocs(t *testing.T) {
	if RaceDetector {
		t.Skip("allocations differ under the race detector")
	}
	ds := newDeadlines(time.Hour)
	ds.at(time.Now())
	if n := testing.AllocsPerRun(100, func() { ds.bound(context.Background(), time.Now()) }); n != 0 {
		t.Errorf("Background: %v allocations, want 0", n)
	}
	parent := context.WithValue(context.Background(), ctxKey{}, 1)
	if n := testing.AllocsPerRun(100, func() { ds.bound(parent, time.Now()) }); n > 1 {
		t.Errorf("with values: %v allocations, want ≤ 1", n)
	}
}
