package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// hookStore is a local store with hooks around each Apply, standing in for a Redis store
// seen over a slow network: before runs before the state changes (an error from it is
// returned without applying, as a failed connection), after runs once the state has
// changed. Like go-redis, a context done before the call sends nothing, and one done when
// the reply comes back makes the call fail although the script ran.
type hookStore struct {
	st     *local.Store
	before func(ctx context.Context, key string) error
	after  func(ctx context.Context, key string)
	hang   chan struct{} // when not nil, Refund blocks until ctx ends or it is closed
}

var _ store.Store = (*hookStore)(nil)

func (s *hookStore) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	if s.before != nil {
		if err := s.before(ctx, key); err != nil {
			return algo.Decision{}, err
		}
	}
	if err := ctx.Err(); err != nil {
		return algo.Decision{}, err
	}
	d, err := s.st.Apply(ctx, key, a, req)
	if s.after != nil {
		s.after(ctx, key)
	}
	if err == nil && ctx.Err() != nil {
		return algo.Decision{}, ctx.Err() // applied, but the reply came too late
	}
	return d, err
}

func (s *hookStore) Refund(ctx context.Context, key string, a algo.Algorithm, n, at int64) error {
	if s.hang != nil {
		select {
		case <-s.hang:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return s.st.Refund(ctx, key, a, n, at)
}

func (s *hookStore) Close() error { return s.st.Close() }

// cancelClock cancels a context as a sleep starts: the caller gives up just as the
// permits would be handed over.
type cancelClock struct {
	clockx.Clock
	cancel func()
}

func (c cancelClock) Sleep(ctx context.Context, d time.Duration) error {
	if c.cancel != nil {
		c.cancel()
	}
	return c.Clock.Sleep(ctx, d)
}

const refundBurst = 50

// perUserItem builds "per user AND per item" on one hookStore: token buckets that do not
// refill on the fake clock, so every permit taken and not given back stays visible.
func perUserItem(t *testing.T, clk clockx.Clock, opts ...limiter.Option) (*limiter.Limiter, *hookStore) {
	t.Helper()
	hs := &hookStore{st: newLocal(t, clockx.NewFake(start))}
	tb := algo.TokenBucket{Rate: 1e-6, Burst: refundBurst}
	opts = append([]limiter.Option{limiter.WithClock(clk)}, opts...)
	user := mustNew(t, hs, tb, append(opts, limiter.WithKeyFunc(userPart))...)
	item := mustNew(t, hs, tb, append(opts, limiter.WithKeyFunc(itemPart))...)
	return mustAll(t, user, item), hs
}

// taken reports how many permits of key's bucket are gone. The item rule repeats the user
// rule's slot, so the composite keeps its state in the namespace of rule 2 (see All).
func taken(t *testing.T, hs *hookStore, key string) int64 {
	t.Helper()
	var a algo.Algorithm = algo.TokenBucket{Rate: 1e-6, Burst: refundBurst}
	if strings.HasPrefix(key, "item:") {
		a = slotAs{a, ":2:tb"}
	}
	d, err := hs.st.Apply(context.Background(), key, a, algo.Request{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Allowed {
		return refundBurst
	}
	_ = hs.st.Refund(context.Background(), key, a, 1, d.At)
	return refundBurst - d.Remaining - 1
}

// slotAs is an algorithm under another slot: a probe of a state the composite namespaced.
type slotAs struct {
	algo.Algorithm
	slot string
}

func (s slotAs) Slot() string { return s.slot }

// TestAllRefundsWhenCallerGivesUp: every way a composite call on two keys can fail after
// the first rule granted leaves both keys untouched.
func TestAllRefundsWhenCallerGivesUp(t *testing.T) {
	t.Parallel()
	errDown := fmt.Errorf("%w: connection reset", store.ErrUnavailable)
	for _, tc := range []struct {
		name   string
		call   string // allow, reserve, wait, try
		before func(cancel func()) func(ctx context.Context, key string) error
		after  func(cancel func()) func(ctx context.Context, key string)
		sleep  bool // cancel as the sleep starts
	}{
		{name: "ctx ends during first rule", call: "allow", after: cancelOnReply("user:u")},
		{name: "ctx ends between rules", call: "allow", before: cancelOnSend("item:i")},
		{name: "ctx ends during second rule", call: "wait", after: cancelOnReply("item:i")},
		{name: "ctx ends during second rule/reserve", call: "reserve", after: cancelOnReply("item:i")},
		{name: "second rule errors", call: "try", before: func(func()) func(context.Context, string) error {
			return func(_ context.Context, key string) error {
				if key == "item:i" {
					return errDown
				}
				return nil
			}
		}},
		{name: "ctx ends as wait sleeps", call: "wait", sleep: true},
		{name: "ctx ends as try sleeps", call: "try", sleep: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var clk clockx.Clock = clockx.NewFake(start)
			if tc.sleep {
				clk = cancelClock{Clock: clk, cancel: cancel}
			}
			c, hs := perUserItem(t, clk)
			if tc.before != nil {
				hs.before = tc.before(cancel)
			}
			if tc.after != nil {
				hs.after = tc.after(cancel)
			}
			var err error
			granted := false
			switch tc.call {
			case "allow":
				var d limiter.Decision
				d, err = c.AllowN(ctx, "u|i", 3)
				granted = d.Allowed
			case "reserve":
				var r *limiter.Reservation
				r, err = c.Reserve(ctx, "u|i", 3, time.Second)
				granted = r != nil && r.OK()
			case "wait":
				err = c.WaitN(ctx, "u|i", 3)
				granted = err == nil
			case "try":
				granted, err = c.TryAcquire(ctx, "u|i", 3, time.Second)
			}
			if granted || err == nil {
				t.Fatalf("granted %v, err %v: want a failed call", granted, err)
			}
			for _, k := range []string{"user:u", "item:i"} {
				if got := taken(t, hs, k); got != 0 {
					t.Errorf("%s: %d permits taken by a call that failed (%v)", k, got, err)
				}
			}
		})
	}
}

// cancelOnReply cancels the caller's context once the rule on key changed its state, before
// the reply comes back.
func cancelOnReply(key string) func(cancel func()) func(ctx context.Context, key string) {
	return func(cancel func()) func(context.Context, string) {
		return func(_ context.Context, k string) {
			if k == key {
				cancel()
			}
		}
	}
}

// cancelOnSend cancels the caller's context just before the rule on key is applied.
func cancelOnSend(key string) func(cancel func()) func(ctx context.Context, key string) error {
	return func(cancel func()) func(context.Context, string) error {
		return func(_ context.Context, k string) error {
			if k == key {
				cancel()
			}
			return nil
		}
	}
}

// TestAllRefundBounded: a refund that hangs is given up after the rules' timeout, or
// without one after a default second, not waited for forever, and the caller gets its
// answer.
func TestAllRefundBounded(t *testing.T) {
	t.Parallel()
	t.Run("WithTimeout", func(t *testing.T) {
		t.Parallel()
		refundBounded(t, limiter.WithTimeout(20*time.Millisecond))
	})
	t.Run("default", func(t *testing.T) {
		t.Parallel()
		refundBounded(t)
	})
}

func refundBounded(t *testing.T, opts ...limiter.Option) {
	c, hs := perUserItem(t, clockx.NewFake(start), opts...)
	hs.hang = make(chan struct{})
	defer close(hs.hang)
	hs.before = func(_ context.Context, key string) error {
		if key == "item:i" {
			return store.ErrUnavailable
		}
		return nil
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.AllowN(context.Background(), "u|i", 1)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("err = %v, want store.ErrUnavailable", err)
		}
	case <-time.After(30 * time.Second): // generous: the bound is a second at most
		t.Fatal("a hung refund held the call")
	}
}

// TestAllRandomCancelConsumedEqualsReceived: over many calls that give up at random
// points, every permit taken from a rule was received by a call that succeeded.
func TestAllRandomCancelConsumedEqualsReceived(t *testing.T) {
	t.Parallel()
	for seed := uint64(1); seed <= 20; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		ctx, cancel := context.Background(), func() {}
		point := 0 // the Apply call (counted from 1) during which the caller gives up; 0: never
		applies := 0
		fail := 0 // the Apply call that fails with the store down
		c, hs := perUserItem(t, clockx.NewFake(start))
		hs.before = func(_ context.Context, _ string) error {
			applies++
			if applies == fail {
				return store.ErrUnavailable
			}
			if applies == point && rng.IntN(2) == 0 {
				cancel() // before the state changes
			}
			return nil
		}
		hs.after = func(_ context.Context, _ string) {
			if applies == point {
				cancel() // after it changed: too late for the reply
			}
		}
		received := map[string]int64{}
		for i := 0; i < 60; i++ {
			var cctx context.Context
			cctx, cancel = context.WithCancel(ctx)
			applies, point, fail = 0, rng.IntN(4), rng.IntN(4)
			key := fmt.Sprintf("u%d|i%d", rng.IntN(3), rng.IntN(3))
			n := int64(1 + rng.IntN(3))
			var ok bool
			switch rng.IntN(3) {
			case 0:
				d, err := c.AllowN(cctx, key, n)
				ok = err == nil && d.Allowed
			case 1:
				ok = c.WaitN(cctx, key, n) == nil
			default:
				got, err := c.TryAcquire(cctx, key, n, time.Second)
				ok = got && err == nil
			}
			cancel()
			if ok {
				received[userPart(key)] += n
				received[itemPart(key)] += n
			}
		}
		for k := 0; k < 3; k++ {
			for _, key := range []string{fmt.Sprintf("user:u%d", k), fmt.Sprintf("item:i%d", k)} {
				if got, want := taken(t, hs, key), received[key]; got != want {
					t.Errorf("seed %d: %s: %d permits taken, %d received", seed, key, got, want)
				}
			}
		}
	}
}
