package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
)

// doneContexts returns a cancelled context and one whose deadline has passed, with the
// error each must produce. Neither needs time to pass: the deadline is in 1970.
func doneContexts() []struct {
	name string
	ctx  context.Context
	want error
} {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	cancel2() // already expired; cancelling keeps vet quiet and changes nothing
	return []struct {
		name string
		ctx  context.Context
		want error
	}{
		{"Canceled", cancelled, context.Canceled},
		{"DeadlineExceeded", expired, context.DeadlineExceeded},
	}
}

// runContext checks the store's rule for a done context (see store.Store): the call
// returns the context's error, which does not wrap store.ErrUnavailable, with a zero
// Decision, and consumes or refunds nothing. A key that received such calls must then
// decide exactly like a twin key that did not.
func runContext(t *testing.T, f Factory) {
	for _, a := range algo.Samples() {
		t.Run(fmt.Sprintf("%v", a), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, f, epoch)
			limit := limitOf(a)
			// Both keys hold one grant, so a refund on a done context has something to give back.
			d0 := h.apply("used", a, algo.Request{N: 1})
			h.apply("twin", a, algo.Request{N: 1})
			for _, dc := range doneContexts() {
				for _, req := range []algo.Request{{N: 1}, {N: limit}, {N: 1, MaxWait: algo.Forever}} {
					d, err := h.s.Apply(dc.ctx, "used", a, req)
					checkCtxErr(t, fmt.Sprintf("Apply(%s ctx, %s)", dc.name, reqString(req)), err, dc.want)
					if d != (algo.Decision{}) {
						t.Errorf("Apply(%s ctx, %s) = %s, want the zero Decision", dc.name, reqString(req), describe(d))
					}
				}
				err := h.s.Refund(dc.ctx, "used", a, 1, d0.At)
				checkCtxErr(t, fmt.Sprintf("Refund(%s ctx)", dc.name), err, dc.want)
			}
			// Nothing happened to "used": it decides like "twin" until both are exhausted.
			for i := int64(0); i <= min(limit, 100); i++ { // an unlimited rate has a Limit of 2^53
				got, want := h.apply("used", a, algo.Request{N: 1}), h.apply("twin", a, algo.Request{N: 1})
				if got != want {
					t.Fatalf("request %d after the calls on a done context: %s, while a twin key that "+
						"never saw them decides %s: a done context consumed or refunded", i+1, describe(got), describe(want))
				}
			}
		})
	}
	t.Run("ApplyAll", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, f, epoch)
		m, ok := h.s.(store.MultiApplier)
		if !ok {
			t.Skip("the store does not implement store.MultiApplier")
		}
		rules := []algo.Algorithm{algo.TokenBucket{Rate: 1, Burst: 3}, algo.FixedWindow{Limit: 2, Window: time.Second}}
		for _, dc := range doneContexts() {
			ds, all, err := m.ApplyAll(dc.ctx, "used", rules, algo.Request{N: 1})
			checkCtxErr(t, "ApplyAll("+dc.name+" ctx)", err, dc.want)
			if ds != nil || all {
				t.Errorf("ApplyAll(%s ctx) = %v, %t, want nil, false", dc.name, ds, all)
			}
		}
		for i := 0; i < 3; i++ {
			got, gotOK, err1 := m.ApplyAll(h.ctx, "used", rules, algo.Request{N: 1})
			want, wantOK, err2 := m.ApplyAll(h.ctx, "twin", rules, algo.Request{N: 1})
			if err := errors.Join(err1, err2); err != nil {
				t.Fatalf("ApplyAll: %v", err)
			}
			if gotOK != wantOK || fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("ApplyAll %d after calls on a done context: %v %t, while a twin key decides %v %t",
					i+1, got, gotOK, want, wantOK)
			}
		}
	})
}

// checkCtxErr fails t unless err is the context's error and not a store failure.
func checkCtxErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: error = %v, want one wrapping %v", what, err, want)
	}
	if errors.Is(err, store.ErrUnavailable) {
		t.Errorf("%s: error = %v wraps store.ErrUnavailable: a caller's done context is not a store failure", what, err)
	}
}

// runSemContext checks the same rule for a SemaphoreStore: on a done context Acquire
// grants nothing, Release keeps the lease, Renew does not extend it, and each returns the
// context's error, not store.ErrUnavailable.
func runSemContext(t *testing.T, f SemaphoreFactory) {
	h := newSemHarness(t, f)
	cfg := algo.Semaphore{Permits: 1, LeaseTTL: time.Second}
	if r, err := h.s.Acquire(h.ctx, "held", cfg, "a", 0); err != nil || !r.Acquired {
		t.Fatalf("Acquire: %+v, %v", r, err)
	}
	for _, dc := range doneContexts() {
		r, err := h.s.Acquire(dc.ctx, "free", cfg, "b", time.Second)
		checkCtxErr(t, "Acquire("+dc.name+" ctx)", err, dc.want)
		if r != (algo.SemaphoreResult{}) {
			t.Errorf("Acquire(%s ctx) = %+v, want the zero result", dc.name, r)
		}
		ok, err := h.s.Release(dc.ctx, "held", "a")
		checkCtxErr(t, "Release("+dc.name+" ctx)", err, dc.want)
		if ok {
			t.Errorf("Release(%s ctx) = true, want false", dc.name)
		}
		ok, err = h.s.Renew(dc.ctx, "held", cfg, "a")
		checkCtxErr(t, "Renew("+dc.name+" ctx)", err, dc.want)
		if ok {
			t.Errorf("Renew(%s ctx) = true, want false", dc.name)
		}
		_, err = h.s.Holders(dc.ctx, "held")
		checkCtxErr(t, "Holders("+dc.name+" ctx)", err, dc.want)
	}
	// "free" got no holder and no queue place; "held" kept its lease, not renewed: it
	// still ends one LeaseTTL after the first Acquire.
	if n, err := h.s.Holders(h.ctx, "free"); err != nil || n != 0 {
		t.Errorf("Holders(free) = %d, %v; want 0: an Acquire on a done context took a permit", n, err)
	}
	if r, err := h.s.Acquire(h.ctx, "free", cfg, "c", 0); err != nil || !r.Acquired {
		t.Errorf("Acquire(free) by another token = %+v, %v; want granted: a done context left a queue place", r, err)
	}
	if n, err := h.s.Holders(h.ctx, "held"); err != nil || n != 1 {
		t.Errorf("Holders(held) = %d, %v; want 1: a Release on a done context released", n, err)
	}
	h.clk.Add(time.Second)
	if n, err := h.s.Holders(h.ctx, "held"); err != nil || n != 0 {
		t.Errorf("Holders(held) after LeaseTTL = %d, %v; want 0: a Renew on a done context renewed", n, err)
	}
}
