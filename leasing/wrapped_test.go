package leasing_test

import (
	"context"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/leasing"
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
