package local

import (
	"context"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

// TestRefundMovesFreshInstant: a refund that writes a state moves its entry's fresh
// instant, as the Lua refund sets the key's TTL. A GCRA refund made after the grant's
// state went idle moves the TAT to now; the clock then steps back and a sweep runs. A
// store that forgot the state (its fresh instant still that of the grant) answered the
// earlier instant as a fresh key would, granting what the kept state (and Redis) denies.
// Found by TestModel (token-bucket seed 157, through a composite's global rule).
func TestRefundMovesFreshInstant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	g := algo.GCRA{Rate: 100, Burst: 2} // one permit per 10 ms
	swept, clkS := newTestStore(t)
	kept, clkK := newTestStore(t)
	var got [2]algo.Decision
	for i, st := range []struct {
		s     *Store
		add   func(time.Duration)
		sweep bool
	}{{swept, func(d time.Duration) { clkS.Add(d) }, true}, {kept, func(d time.Duration) { clkK.Add(d) }, false}} {
		d, err := st.s.Apply(ctx, "k", g, algo.Request{N: 1})
		if err != nil || !d.Allowed {
			t.Fatalf("first grant: %+v, %v", d, err)
		}
		st.add(50 * time.Millisecond) // the state is fresh again since +10 ms
		if err := st.s.Refund(ctx, "k", g, 1, d.At); err != nil {
			t.Fatal(err)
		}
		st.add(-20 * time.Millisecond)
		if st.sweep {
			st.s.Sweep()
		}
		if got[i], err = st.s.Apply(ctx, "k", g, algo.Request{N: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if got[0] != got[1] {
		t.Errorf("after a sweep: %+v; kept: %+v (a sweep must forget only states that decide like fresh ones)", got[0], got[1])
	}
}

// TestDenialKeepsFreshInstant: a denial writes nothing, so it leaves the entry's fresh
// instant where its last grant put it, as Redis leaves the key's TTL. Before, a denial
// under a config the state was nearly fresh under (Burst 1) moved the instant earlier, and
// after a second change (Burst 8) the entry started fresh while Redis still held the
// drained state (found by TestModel, token-bucket seed 12).
func TestDenialKeepsFreshInstant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clk := newTestStore(t)
	apply := func(a algo.Algorithm, n int64) algo.Decision {
		t.Helper()
		d, err := s.Apply(ctx, "k", a, algo.Request{N: n})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := apply(algo.TokenBucket{Rate: 50, Burst: 5}, 5); !d.Allowed { // fresh again in 100 ms
		t.Fatalf("first grant denied: %+v", d)
	}
	if d := apply(algo.TokenBucket{Rate: 50, Burst: 1}, 1); d.Allowed || d.ResetAfter != 20*time.Millisecond {
		t.Fatalf("under Burst 1: %+v, want a denial fresh in 20ms", d)
	}
	clk.Add(67 * time.Millisecond)
	// 67 ms refill 3.35 of the 5 taken: 3 of Burst 8 left, not a fresh 8.
	if d := apply(algo.TokenBucket{Rate: 50, Burst: 8}, 8); d.Allowed || d.Remaining != 3 {
		t.Errorf("under Burst 8 after 67 ms: %+v, want a denial with Remaining 3 (the state of the last grant is not expired)", d)
	}
}
