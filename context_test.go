package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
)

// doneCtxs are a cancelled context and one past its deadline, with the error each gives.
func doneCtxs() map[error]context.Context {
	c, cancel := context.WithCancel(context.Background())
	cancel()
	d, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	cancel2()
	return map[error]context.Context{context.Canceled: c, context.DeadlineExceeded: d}
}

// isCtxErr reports whether err is want and not a store failure.
// tripAtOnce is a breaker that opens, for a minute, on one failure in a window of 1 ns:
// once the fake clock has moved on from it.
var tripAtOnce = limiter.WithCircuitBreaker(limiter.CircuitBreaker{MinCalls: 1, Window: time.Nanosecond, CoolDown: time.Minute})

func isCtxErr(err, want error) bool {
	return errors.Is(err, want) && !errors.Is(err, store.ErrUnavailable) && !errors.Is(err, limiter.ErrCircuitOpen)
}

// TestDoneContext checks the rule for a call whose context is already done, under every
// failure policy, with and without timeout and breaker: the context's error, a zero
// Decision, nothing consumed, no error handler call, no breaker movement.
func TestDoneContext(t *testing.T) {
	t.Parallel()
	variants := map[string][]limiter.Option{
		"direct":        nil,
		"timeout":       {limiter.WithTimeout(time.Second)},
		"breaker":       {tripAtOnce},
		"fail-open":     {limiter.WithFailurePolicy(limiter.FailOpen), tripAtOnce},
		"fallback":      {limiter.WithFailurePolicy(limiter.Fallback(mustNew(t, newLocal(t, nil), algo.TokenBucket{Rate: 100, Burst: 100})))},
		"fail-open+ttl": {limiter.WithFailurePolicy(limiter.FailOpen), limiter.WithTimeout(time.Second)},
	}
	for name, opts := range variants {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			l, st, h, clk := newFlaky(t, opts...) // TokenBucket 1/s, burst 2
			for want, ctx := range doneCtxs() {
				calls := map[string]func() (bool, error){
					"Allow": func() (bool, error) { d, err := l.Allow(ctx, "k"); return d != (limiter.Decision{}), err },
					"Reserve": func() (bool, error) {
						r, err := l.Reserve(ctx, "k", 1, time.Hour)
						return r != nil, err
					},
					"Wait": func() (bool, error) { return false, l.Wait(ctx, "k") },
					"TryAcquire": func() (bool, error) {
						return l.TryAcquire(ctx, "k", 1, time.Hour)
					},
				}
				for call, f := range calls {
					got, err := f()
					if !isCtxErr(err, want) || got {
						t.Errorf("%s on a done context (%v): result %t, error %v; want a zero result and an error wrapping %v only",
							call, want, got, err, want)
					}
				}
			}
			if n := h.count(); n != 0 {
				t.Errorf("the error handler was called %d times for the caller's done contexts", n)
			}
			// Nothing was taken, and the breaker (which opens on one failure in a window
			// of 1 ns) did not open: the burst of 2 is whole, answered by the store.
			clk.Add(time.Nanosecond)
			before := st.applies.Load()
			for i := 0; i < 2; i++ {
				if d := allowN(t, l, "k", 1); !d.Allowed || d.Remaining != int64(1-i) {
					t.Fatalf("live Allow %d after the done calls: %+v, want allowed with Remaining %d", i+1, d, 1-i)
				}
			}
			if st.applies.Load()-before != 2 {
				t.Fatal("the live calls did not reach the store: a done context moved the breaker")
			}
		})
	}
}

// TestDoneContextBreakerOpen checks that a done context is the caller's error even while
// the breaker is open: FailOpen must not allow it.
func TestDoneContextBreakerOpen(t *testing.T) {
	t.Parallel()
	l, st, h, clk := newFlaky(t, limiter.WithFailurePolicy(limiter.FailOpen), tripAtOnce)
	st.down.Store(true)
	if d, err := l.Allow(context.Background(), "k"); !d.Allowed || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Allow on a down store under FailOpen: %+v, %v", d, err)
	}
	clk.Add(time.Nanosecond) // the window ends: the breaker opens
	reports := h.count()
	for want, ctx := range doneCtxs() {
		d, err := l.Allow(ctx, "k")
		if d.Allowed || !isCtxErr(err, want) {
			t.Errorf("Allow on a done context (%v) with the breaker open: %+v, %v; want denied with the context's error", want, d, err)
		}
		r, err := l.Reserve(ctx, "k", 1, 0)
		if r != nil || !isCtxErr(err, want) {
			t.Errorf("Reserve on a done context (%v) with the breaker open: %v, %v; want nil and the context's error", want, r, err)
		}
	}
	if h.count() != reports {
		t.Errorf("the error handler was called for done contexts")
	}
}

// TestDoneContextComposite checks the rule on a composite, atomic (one store) or not.
func TestDoneContextComposite(t *testing.T) {
	t.Parallel()
	for _, shared := range []bool{true, false} {
		t.Run(fmt.Sprintf("shared=%t", shared), func(t *testing.T) {
			t.Parallel()
			s1 := newLocal(t, nil)
			s2 := s1
			if !shared {
				s2 = newLocal(t, nil)
			}
			l := mustAll(t,
				mustNew(t, s1, algo.TokenBucket{Rate: 1, Burst: 2}, limiter.WithFailurePolicy(limiter.FailOpen)),
				mustNew(t, s2, algo.FixedWindow{Limit: 2, Window: time.Hour}, limiter.WithFailurePolicy(limiter.FailOpen)))
			for want, ctx := range doneCtxs() {
				d, err := l.Allow(ctx, "k")
				if d.Allowed || !isCtxErr(err, want) {
					t.Errorf("composite Allow on a done context (%v): %+v, %v", want, d, err)
				}
				if err := l.Wait(ctx, "k"); !isCtxErr(err, want) {
					t.Errorf("composite Wait on a done context (%v): %v", want, err)
				}
			}
			for i := 0; i < 2; i++ {
				if d := allowN(t, l, "k", 1); !d.Allowed {
					t.Fatalf("live composite Allow %d: %+v, want allowed: a done context consumed", i+1, d)
				}
			}
		})
	}
}

// TestCancelOnDoneContextRefunds checks that Reservation.Cancel gives the permits back even
// when the context it is given is done (the usual "Wait failed, Cancel" sequence).
func TestCancelOnDoneContextRefunds(t *testing.T) {
	t.Parallel()
	l, _ := newTest(t, algo.TokenBucket{Rate: 1, Burst: 1})
	allowN(t, l, "k", 1)
	r, err := l.Reserve(context.Background(), "k", 1, time.Hour)
	if err != nil || !r.OK() || r.Delay() != time.Second {
		t.Fatalf("Reserve: %v, %v", r, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Cancel(ctx); err != nil {
		t.Fatalf("Cancel on a done context: %v", err)
	}
	r2, err := l.Reserve(context.Background(), "k", 1, time.Hour)
	if err != nil || r2.Delay() != time.Second {
		t.Fatalf("Reserve after Cancel: delay %v, %v; want 1s: the cancelled reservation was not given back", r2.Delay(), err)
	}
}
