package leasing_test

import (
	"context"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/leasing"
	"github.com/ratekit/limiter/local"
)

// unwrapper is a custom wrapper outside package algo: it decides as its inner algorithm
// and says so only with Unwrap.
type unwrapper struct{ algo.Algorithm }

func (w unwrapper) Unwrap() algo.Algorithm { return w.Algorithm }

// TestLeaseLooksThroughWrappers (issue 22): a rule wrapped in algo.Named or in a custom
// wrapper with Unwrap is leased exactly as the rule itself: the same answers and the same
// number of calls reaching the inner store over one history on a fake clock (before, a
// wrapped rule was never leased: every request reached the inner store). A fixed window
// wrapped keeps its leases within the window that counted them. A Penalty is not leased
// (a slice denied would be an offence no request committed), also when wrapped.
func TestLeaseLooksThroughWrappers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	run := func(a algo.Algorithm) (answers []algo.Decision, calls int64) {
		s, inner, clk := newLeased(t, 10, leasing.WithTTL(200*time.Millisecond))
		for i := 0; i < 300; i++ {
			clk.Add(7 * time.Millisecond)
			d, err := s.Apply(ctx, "k", a, algo.Request{N: 1 + int64(i%3)})
			if err != nil {
				t.Fatal(err)
			}
			answers = append(answers, d)
		}
		return answers, inner.applies.Load()
	}
	for _, a := range []algo.Algorithm{
		algo.TokenBucket{Rate: 300, Burst: 40},
		algo.FixedWindow{Limit: 150, Window: 500 * time.Millisecond},
		algo.GCRA{Rate: 300, Burst: 40},
	} {
		want, wantCalls := run(a)
		if wantCalls >= 300/2 {
			t.Fatalf("%v: %d of 300 requests reached the inner store: not leased", a, wantCalls)
		}
		for _, w := range []algo.Algorithm{algo.Named(a, "n"), unwrapper{a}, algo.Named(unwrapper{a}, "m")} {
			got, calls := run(w)
			if calls != wantCalls {
				t.Errorf("%v: %d calls reached the inner store, want %d as for %v", w, calls, wantCalls, a)
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("%v: request %d answered %+v, want %+v as for %v", w, i, got[i], want[i], a)
					break
				}
			}
		}
	}
	pen := algo.Penalty{Rule: algo.TokenBucket{Rate: 300, Burst: 40}, Block: time.Second}
	for _, a := range []algo.Algorithm{pen, algo.Named(pen, "p"), unwrapper{pen}} {
		if _, calls := run(a); calls != 300 {
			t.Errorf("%v: %d of 300 requests reached the inner store, want all: a Penalty is not leased", a, calls)
		}
	}
}

// TestLeaseTakesIncomparableAlgorithms (issue 35.5): an algorithm that == cannot compare
// (a wrapper holding a slice, or a comparable wrapper holding one) is accepted as the plain
// stores accept it: it is not leased, so every request reaches the inner store and is
// answered as the inner store alone answers it. Before, the second call on a key compared
// it with the lease's config and panicked with the lease's lock held: the key stayed
// blocked and Close never returned.
func TestLeaseTakesIncomparableAlgorithms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tb := algo.TokenBucket{Rate: 300, Burst: 40}
	for _, a := range []algo.Algorithm{teststore.Tagged{Scripted: tb, Tags: []string{"x"}}, unwrapper{teststore.Tagged{Scripted: tb}}} {
		s, inner, clk := newLeased(t, 10, leasing.WithTTL(200*time.Millisecond))
		refClk := clockx.NewFake(epoch)
		ref, err := local.New(local.WithClock(refClk))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ref.Close() })
		var got, want []algo.Decision
		for i := 0; i < 50; i++ {
			clk.Add(7 * time.Millisecond)
			refClk.Add(7 * time.Millisecond)
			req := algo.Request{N: 1 + int64(i%3)}
			d, err := teststore.NoPanic(func() (algo.Decision, error) { return s.Apply(ctx, "k", a, req) })
			if err != nil {
				t.Errorf("%v: request %d: %v", a, i, err)
				break
			}
			got = append(got, d)
			if d, err = ref.Apply(ctx, "k", a, req); err != nil {
				t.Fatal(err)
			}
			want = append(want, d)
			if _, err := teststore.NoPanic(func() (algo.Decision, error) { return s.Peek(ctx, "k", a, req) }); err != nil {
				t.Errorf("%v: Peek: %v", a, err)
				break
			}
		}
		if err := s.Refund(ctx, "k", a, 1, 0); err != nil {
			t.Errorf("%v: Refund: %v", a, err)
		}
		if err := s.Reset(ctx, "k", a); err != nil {
			t.Errorf("%v: Reset: %v", a, err)
		}
		closed := make(chan error, 1)
		go func() { closed <- s.Close() }()
		select {
		case err := <-closed:
			if err != nil {
				t.Errorf("%v: Close: %v", a, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%v: Close did not return: a lease's lock is held", a)
		}
		if t.Failed() {
			continue
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%v: request %d answered %+v, want %+v as the inner store alone", a, i, got[i], want[i])
				break
			}
		}
		if n := inner.applies.Load(); n != 50 {
			t.Errorf("%v: %d of 50 requests reached the inner store, want all: not leased", a, n)
		}
	}
}
