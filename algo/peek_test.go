package algo

import (
	"testing"
	"time"
)

// TestPeekRemainingIsNow checks that Peek's Remaining is what is available before the
// request (issue 24): a fresh TokenBucket{Rate 1, Burst 10} peeks 10, not the 9 its Apply
// leaves, and every algorithm peeks the same Remaining whatever the request.
func TestPeekRemainingIsNow(t *testing.T) {
	t.Parallel()
	const now = 1_700_000_000_000_000
	one := Request{N: 1}
	if d, ok := Peek(TokenBucket{Rate: 1, Burst: 10}, nil, now, one); !ok || !d.Allowed || d.Remaining != 10 {
		t.Errorf("fresh TokenBucket{1, 10}: Peek = %+v, %t; want allowed with Remaining 10", d, ok)
	}
	tb := TokenBucket{Rate: 1, Burst: 10}
	st := tb.NewState()
	tb.Apply(st, now, Request{N: 7})
	if d, _ := Peek(tb, st, now+500_000, one); !d.Allowed || d.Remaining != 3 { // 3.5 tokens
		t.Errorf("TokenBucket with 3.5 tokens: Peek = %+v, want allowed with Remaining 3", d)
	}
	if d, _ := Peek(tb, st, now+500_000, Request{N: 4}); d.Allowed || d.Remaining != 3 {
		t.Errorf("TokenBucket with 3.5 tokens: Peek(4) = %+v, want denied with Remaining 3", d)
	}
	for _, a := range []Algorithm{
		FixedWindow{Limit: 5, Window: time.Second},
		SlidingWindowLog{Limit: 5, Window: time.Second},
		SlidingWindowCounter{Limit: 5, Window: time.Second},
		TokenBucket{Rate: 2, Burst: 5},
		LeakyBucket{Rate: 2, Capacity: 5},
		GCRA{Rate: 2, Burst: 5},
		Penalty{Rule: GCRA{Rate: 2, Burst: 5}, Block: time.Second},
		Named(FixedWindow{Limit: 5, Window: time.Second}, "n"),
	} {
		st := a.NewState()
		for i, want := range []int64{5, 4, 2, 0} {
			for _, req := range []Request{{N: 1}, {N: 3}, {N: 5}, {N: 6}, {N: 2, MaxWait: time.Hour}} {
				d, ok := Peek(a, st, now, req)
				if !ok || d.Remaining != want {
					t.Errorf("%v after %d grants: Peek(%+v) = %+v, %t; want Remaining %d", a, i, req, d, ok, want)
				}
				if got := d.Remaining >= req.N; req.MaxWait == 0 && d.Allowed != got {
					t.Errorf("%v after %d grants: Peek(%+v) = %+v; Allowed must be Remaining ≥ N", a, i, req, d)
				}
			}
			a.Apply(st, now, Request{N: []int64{1, 2, 2, 1}[i]})
		}
	}
}
