package smooth_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/smooth"
	"github.com/ratekit/limiter/store"
)

// These tests put the limiter on a fake clock while the context deadline is real time (as
// in the root package): a deadline shorter than the wait refuses it whatever the machine's
// load, since it can only come closer; a deadline of an hour never does in a test.

// TestSmoothTryAcquireRefusesPastDeadline is issue 16's report: a SmoothBursty at rate 1, one Acquire,
// then TryAcquire(50 ms deadline, 1, 5 s) used to reserve the permit and sleep; the next
// Acquire then waited for two permits.
func TestSmoothTryAcquireRefusesPastDeadline(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(epoch)
	l, err := smooth.New(algo.SmoothBursty{Rate: 1}, smooth.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	if got, err := l.Acquire(bg, 1); got != 0 || err != nil {
		t.Fatalf("first Acquire = %v, %v; want free", got, err)
	}
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	if ok, err := l.TryAcquire(ctx, 1, 5*time.Second); ok || err != nil {
		t.Fatalf("TryAcquire(50 ms deadline, timeout 5 s) = %v, %v; want false, nil at once", ok, err)
	}
	if got := clk.Now(); !got.Equal(epoch) {
		t.Errorf("TryAcquire slept %v; want no sleep", got.Sub(epoch))
	}
	if got, err := l.Acquire(bg, 1); got != time.Second || err != nil {
		t.Errorf("next Acquire = %v, %v; want 1s (the refused TryAcquire reserved nothing)", got, err)
	}
	// A deadline further than the wait does not stand in the way.
	far, cancelFar := context.WithTimeout(bg, time.Hour)
	defer cancelFar()
	if ok, err := l.TryAcquire(far, 1, 5*time.Second); !ok || err != nil {
		t.Errorf("TryAcquire(1 h deadline, timeout 5 s) = %v, %v; want true", ok, err)
	}
}

func TestSmoothAcquireRefusesPastDeadline(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(epoch)
	l, err := smooth.New(algo.SmoothWarmingUp{Rate: 2, Warmup: time.Second}, smooth.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	if got, err := l.Acquire(bg, 4); got != 0 || err != nil {
		t.Fatalf("first Acquire = %v, %v; want free", got, err)
	}
	want, err := l.Acquire(bg, 1) // pays for the 4 cold permits
	if err != nil || want <= 50*time.Millisecond {
		t.Fatalf("second Acquire = %v, %v; want a wait above 50 ms", want, err)
	}
	before := clk.Now()
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	defer cancel()
	got, err := l.Acquire(ctx, 3)
	// One sentinel for every refused wait: limiter.WaitN's, which is also a deadline.
	if !errors.Is(err, limiter.ErrWouldExceedDeadline) || !errors.Is(err, context.DeadlineExceeded) || got != 0 {
		t.Fatalf("Acquire(50 ms deadline) = %v, %v; want 0, limiter.ErrWouldExceedDeadline", got, err)
	}
	if slept := clk.Now().Sub(before); slept != 0 {
		t.Errorf("refused Acquire slept %v", slept)
	}
	// Nothing was reserved: the same call without the deadline waits for the permit
	// before it only (0.5 s), not for the 3 refused ones too.
	if got, err := l.Acquire(bg, 3); got != 500*time.Millisecond || err != nil {
		t.Errorf("Acquire after the refusal = %v, %v; want 500ms", got, err)
	}
	far, cancelFar := context.WithTimeout(bg, time.Hour)
	defer cancelFar()
	if got, err := l.Acquire(far, 1); got != 1500*time.Millisecond || err != nil {
		t.Errorf("Acquire(1 h deadline) = %v, %v; want 1.5s", got, err)
	}
	// A wait of 31.7 years is still ErrExceedsLimit, deadline or not.
	tiny, err := smooth.New(algo.SmoothBursty{Rate: 1e-15}, smooth.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tiny.Acquire(bg, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := tiny.Acquire(far, 1); !errors.Is(err, limiter.ErrExceedsLimit) {
		t.Errorf("Acquire(31.7 years, 1 h deadline) = %v, want limiter.ErrExceedsLimit", err)
	}
}

// steppedClock's Sleep reports the duration it was asked for, then blocks until its context
// ends; the test moves Now meanwhile, so that a sleep cut short has a known length.
type steppedClock struct {
	mu       sync.Mutex
	now      time.Time
	sleeping chan time.Duration
}

func (c *steppedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *steppedClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func (c *steppedClock) Sleep(ctx context.Context, d time.Duration) error {
	c.sleeping <- d
	<-ctx.Done()
	return ctx.Err()
}

// refundStore records the Refund calls that reach a local store.
type refundStore struct {
	store.Store
	mu      sync.Mutex
	refunds []refundCall
}

type refundCall struct {
	alg   algo.Algorithm
	n, at int64
	ctxOK bool // the refund's context was not done
}

func (s *refundStore) Refund(ctx context.Context, key string, a algo.Algorithm, n, at int64) error {
	s.mu.Lock()
	s.refunds = append(s.refunds, refundCall{alg: a, n: n, at: at, ctxOK: ctx.Err() == nil})
	s.mu.Unlock()
	return s.Store.Refund(ctx, key, a, n, at)
}

func TestSmoothCancelledSleepRefundsAndReportsSlept(t *testing.T) {
	t.Parallel()
	clk := &steppedClock{now: epoch, sleeping: make(chan time.Duration, 1)}
	st := &refundStore{Store: teststore.Local(t, local.WithClock(clk), local.WithSweepInterval(0))}
	t.Cleanup(func() { st.Close() })
	l, err := smooth.New(algo.SmoothBursty{Rate: 1}, smooth.WithClock(clk), smooth.WithStore(st, "k"))
	if err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	if got, err := l.Acquire(bg, 1); got != 0 || err != nil {
		t.Fatalf("first Acquire = %v, %v; want free", got, err)
	}
	type result struct {
		slept time.Duration
		ok    bool
		err   error
	}
	for i, try := range []bool{false, true} {
		ctx, cancel := context.WithCancel(bg)
		res := make(chan result, 1)
		go func() {
			if try {
				ok, err := l.TryAcquire(ctx, 2, time.Hour)
				res <- result{ok: ok, err: err}
				return
			}
			slept, err := l.Acquire(ctx, 2)
			res <- result{slept: slept, err: err}
		}()
		<-clk.sleeping
		clk.Add(300 * time.Millisecond)
		cancel()
		r := <-res
		if !errors.Is(r.err, context.Canceled) || r.ok {
			t.Fatalf("try=%v: cancelled mid-sleep: ok=%v err=%v; want context.Canceled", try, r.ok, r.err)
		}
		if !try && r.slept != 300*time.Millisecond {
			t.Errorf("Acquire cancelled after 300 ms reported %v slept", r.slept)
		}
		st.mu.Lock()
		calls := append([]refundCall(nil), st.refunds...)
		st.mu.Unlock()
		if len(calls) != i+1 {
			t.Fatalf("try=%v: %d refunds after %d cancelled sleeps", try, len(calls), i+1)
		}
		c := calls[i]
		// Each grant is usable once the permits before it are paid for: the first at 1 s,
		// the second after those 2 (the refund gives nothing back) at 3 s.
		wantAt := (epoch.Add([]time.Duration{time.Second, 3 * time.Second}[i])).UnixMicro()
		if _, bursty := c.alg.(algo.SmoothBursty); !bursty || c.n != 2 || c.at != wantAt || !c.ctxOK {
			t.Errorf("try=%v: refund %+v; want SmoothBursty, n=2, at=%d, live context", try, c, wantAt)
		}
	}
}
