package limiter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/stillclock"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

func TestWaitN(t *testing.T) {
	t.Parallel()
	for _, c := range algCases() {
		t.Run(c.a.Name(), func(t *testing.T) {
			t.Parallel()
			l, clk := newTest(t, c.a)
			ctx := context.Background()
			for _, k := range []string{"nodeadline", "deadline", "short", "control", "short-control"} {
				allowN(t, l, k, c.fill)
			}
			// The control key tells how long the wait should be.
			r, err := l.Reserve(ctx, "control", 1, algo.Forever)
			if err != nil {
				t.Fatal(err)
			}
			want := r.Delay()

			before := clk.Now()
			if err := l.Wait(ctx, "nodeadline"); err != nil {
				t.Fatal(err)
			}
			if got := clk.Now().Sub(before); got != want {
				t.Fatalf("Wait without a deadline slept %v, want %v", got, want)
			}
			// A wait that fits in the deadline (real time, far away) is the same wait.
			clk.Set(before)
			dctx, cancel := context.WithTimeout(ctx, time.Hour)
			defer cancel()
			if err := l.WaitN(dctx, "deadline", 1); err != nil {
				t.Fatal(err)
			}
			if got := clk.Now().Sub(before); got != want {
				t.Fatalf("Wait with a far deadline slept %v, want %v", got, want)
			}
			// A wait past the deadline fails at once and reserves nothing.
			clk.Set(before)
			err = nearDeadline(ctx, want/2, func(sctx context.Context) error { return l.WaitN(sctx, "short", 1) })
			if !errors.Is(err, limiter.ErrWouldExceedDeadline) {
				t.Fatalf("WaitN past the deadline = %v, want ErrWouldExceedDeadline", err)
			}
			if !clk.Now().Equal(before) {
				t.Fatalf("WaitN past the deadline moved the clock to %v", clk.Now())
			}
			// Impossible requests fail at once.
			if err := l.WaitN(ctx, "nodeadline", 5); !errors.Is(err, limiter.ErrExceedsLimit) {
				t.Fatalf("WaitN(5) over a limit of 4 = %v, want ErrExceedsLimit", err)
			}
			if !clk.Now().Equal(before) {
				t.Fatalf("WaitN(5) moved the clock to %v", clk.Now())
			}
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			if err := l.Wait(cctx, "nodeadline"); !errors.Is(err, context.Canceled) {
				t.Fatalf("Wait with a cancelled context = %v, want context.Canceled", err)
			}
			sameFuture(t, l, clk, [2]string{"short", "short-control"})
		})
	}
}

func TestWaitFullQueueRetries(t *testing.T) {
	t.Parallel()
	// A full leaky-bucket queue denies even an unbounded reservation; without a deadline
	// Wait sleeps until the request fits in the queue, then waits its turn in it.
	l, clk := newTest(t, algo.LeakyBucket{Rate: 2, Capacity: 2})
	ctx := context.Background()
	allowN(t, l, "k", 2)
	if err := l.Wait(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	// Level 2 → it fits at level 1 (after 500ms), then waits for that unit to leak (500ms).
	if got, want := clk.Now().Sub(start), time.Second; got != want {
		t.Fatalf("Wait on a full queue slept %v, want %v", got, want)
	}
	dctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	allowN(t, l, "k2", 2)
	if err := l.Wait(dctx, "k2"); !errors.Is(err, limiter.ErrWouldExceedDeadline) {
		t.Fatalf("Wait on a full queue with a deadline = %v, want ErrWouldExceedDeadline", err)
	}
}

// appliedStore reports each decision it makes on a channel.
type appliedStore struct {
	store.Store
	applied chan limiter.Decision
}

func (s *appliedStore) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	d, err := s.Store.Apply(ctx, key, a, req)
	s.applied <- d
	return d, err
}

func TestWaitCancelledDuringSleepRefunds(t *testing.T) {
	t.Parallel()
	for _, c := range algCases() {
		t.Run(c.a.Name(), func(t *testing.T) {
			t.Parallel()
			clk := stillclock.New(start)
			st := &appliedStore{Store: teststore.Local(t, local.WithClock(clk), local.WithSweepInterval(0)),
				applied: make(chan limiter.Decision, 100)}
			t.Cleanup(func() { _ = st.Close() })
			l, err := limiter.New(st, c.a, limiter.WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			for _, k := range []string{"waiter", "control"} {
				allowN(t, l, k, c.fill)
				<-st.applied
			}
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- l.Wait(wctx, "waiter") }()
			if d := <-st.applied; !d.Allowed || d.Wait <= 0 {
				t.Fatalf("Wait's reservation: %+v, want granted with a wait", d)
			}
			cancel() // the clock never moves: Wait is asleep or about to be
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("Wait cancelled while sleeping = %v, want context.Canceled", err)
			}
			// The refund left "waiter" as if Wait had never reserved. Compare on a fake
			// clock from here: the still clock's sleeps would block.
			fake := clockx.NewFake(clk.Now())
			go func() {
				for range st.applied {
				}
			}()
			t.Cleanup(func() { close(st.applied) })
			st2 := &forwardClock{Store: st, still: clk, fake: fake}
			l2, err := limiter.New(st2, c.a, limiter.WithClock(fake))
			if err != nil {
				t.Fatal(err)
			}
			sameFuture(t, l2, fake, [2]string{"waiter", "control"})
		})
	}
}

// forwardClock moves a still clock to a fake clock's time before each call, so a store on
// the still clock can be driven by a limiter sleeping on the fake one.
type forwardClock struct {
	store.Store
	still *stillclock.Clock
	fake  *clockx.Fake
}

func (s *forwardClock) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	s.still.Set(s.fake.Now())
	return s.Store.Apply(ctx, key, a, req)
}

func TestTryAcquire(t *testing.T) {
	t.Parallel()
	for _, c := range algCases() {
		t.Run(c.a.Name(), func(t *testing.T) {
			t.Parallel()
			l, clk := newTest(t, c.a)
			ctx := context.Background()
			if ok, err := l.TryAcquire(ctx, "fresh", 1, 0); !ok || err != nil {
				t.Fatalf("TryAcquire on a fresh key = %v, %v; want true", ok, err)
			}
			if ok, err := l.TryAcquire(ctx, "fresh2", 1, -time.Second); !ok || err != nil {
				t.Fatalf("TryAcquire with a negative timeout on a fresh key = %v, %v; want true", ok, err)
			}
			if !clk.Now().Equal(start) {
				t.Fatalf("TryAcquire with permits available moved the clock to %v", clk.Now())
			}
			for _, k := range []string{"wait", "over", "control", "over-control"} {
				allowN(t, l, k, c.fill)
			}
			// With MaxWait 0 a leaky bucket is a meter, which c.fill leaves room in.
			for _, k := range []string{"neg", "neg-control"} {
				allowN(t, l, k, 4)
			}
			r, err := l.Reserve(ctx, "control", 1, algo.Forever)
			if err != nil {
				t.Fatal(err)
			}
			want := r.Delay()
			if err := r.Cancel(ctx); err != nil {
				t.Fatal(err)
			}
			// Within the timeout: granted after sleeping the wait.
			if ok, err := l.TryAcquire(ctx, "wait", 1, want); !ok || err != nil {
				t.Fatalf("TryAcquire(timeout = the wait) = %v, %v; want true", ok, err)
			}
			if got := clk.Now().Sub(start); got != want {
				t.Fatalf("TryAcquire slept %v, want %v", got, want)
			}
			clk.Set(start)
			// Beyond the timeout, or a negative timeout: false at once, nothing reserved.
			if ok, err := l.TryAcquire(ctx, "over", 1, want-time.Microsecond); ok || err != nil {
				t.Fatalf("TryAcquire(timeout < the wait) = %v, %v; want false, nil", ok, err)
			}
			if ok, err := l.TryAcquire(ctx, "neg", 1, -time.Second); ok || err != nil {
				t.Fatalf("TryAcquire(negative timeout) = %v, %v; want false, nil", ok, err)
			}
			if !clk.Now().Equal(start) {
				t.Fatalf("a failed TryAcquire moved the clock to %v", clk.Now())
			}
			if ok, err := l.TryAcquire(ctx, "over", 5, time.Hour); ok || !errors.Is(err, limiter.ErrExceedsLimit) {
				t.Fatalf("TryAcquire(5) over a limit of 4 = %v, %v; want ErrExceedsLimit", ok, err)
			}
			// A context deadline shorter than the timeout bounds the wait too.
			ok := false
			err = nearDeadline(ctx, want/2, func(dctx context.Context) (err error) {
				ok, err = l.TryAcquire(dctx, "over", 1, time.Hour)
				return err
			})
			if ok || err != nil {
				t.Fatalf("TryAcquire past the context deadline = %v, %v; want false, nil", ok, err)
			}
			sameFuture(t, l, clk, [2]string{"over", "over-control"}, [2]string{"neg", "neg-control"})
		})
	}
}
