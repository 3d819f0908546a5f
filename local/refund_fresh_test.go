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
