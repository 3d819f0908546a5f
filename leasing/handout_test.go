package leasing_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/leasing"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// gate holds the first Apply that reaches its store until release is closed, telling
// entered when it arrives.
type gate struct {
	store.Store
	once             sync.Once
	entered, release chan struct{}
}

func (g *gate) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	g.once.Do(func() {
		close(g.entered)
		<-g.release
	})
	return g.Store.Apply(ctx, key, a, req)
}

// The callers waiting for a slice are granted from it by the refill that took it, before
// they wake (so that none has to take the lease's lock again), in turn; a caller whose
// context ended while it waited takes nothing.
func TestRefillGrantsItsWaiters(t *testing.T) {
	const slice, waiters = 10, 5
	a := algo.TokenBucket{Rate: 1, Burst: 100}
	inner, err := local.New(local.WithClock(clockx.NewFake(epoch)), local.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	g := &gate{Store: inner, entered: make(chan struct{}), release: make(chan struct{})}
	ls, err := leasing.New(g, slice)
	if err != nil {
		t.Fatal(err)
	}
	defer ls.Close()
	ctx := context.Background()
	apply := func(ctx context.Context) (algo.Decision, error) {
		return ls.Apply(ctx, "k", a, algo.Request{N: 1})
	}

	first := make(chan algo.Decision)
	go func() {
		d, err := apply(ctx)
		if err != nil {
			t.Error(err)
		}
		first <- d
	}()
	<-g.entered // the refill is in flight
	results := make(chan error, waiters)
	for range waiters {
		go func() {
			d, err := apply(ctx)
			if err == nil && !d.Allowed {
				err = errors.New("denied")
			}
			results <- err
		}()
	}
	cctx, cancel := context.WithCancel(ctx)
	cancelled := make(chan error)
	go func() {
		_, err := apply(cctx)
		cancelled <- err
	}()
	for { // every caller is waiting: polls state, never sleeps
		if n, _ := leasing.LeaseOf(ls, "k", a); n == waiters+1 {
			break
		}
		runtime.Gosched()
	}
	cancel()
	if err := <-cancelled; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v, want context.Canceled", err)
	}

	close(g.release)
	if d := <-first; !d.Allowed {
		t.Fatalf("refill's own request: %+v", d)
	}
	// The refill has returned: its waiters were granted before it did, whether or not
	// they have run since.
	if _, left := leasing.LeaseOf(ls, "k", a); left != slice-1-waiters {
		t.Errorf("left after the refill = %d, want %d (its waiters granted by it)", left, slice-1-waiters)
	}
	for range waiters {
		if err := <-results; err != nil {
			t.Error(err)
		}
	}
	if _, left := leasing.LeaseOf(ls, "k", a); left != slice-1-waiters {
		t.Errorf("left = %d, want %d: the cancelled waiter took nothing", left, slice-1-waiters)
	}
}
