package algo_test

import (
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

// TestGCRAResetAfterRaisedRate: while a raised Rate is not yet written (it takes effect at
// the key's first grant after the change), the held TAT shrinks at the old rate, so a
// decision that writes nothing must report the time until the stored TAT has passed, not
// the rescaled distance. Before, a denial 1 ms after the change reported 1.9 ms where the
// state stays non-fresh for 19 ms, and the local store forgot it early (found by TestModel,
// gcra seeds 15 and 901).
func TestGCRAResetAfterRaisedRate(t *testing.T) {
	t.Parallel()
	slow, fast := algo.GCRA{Rate: 100, Burst: 2}, algo.GCRA{Rate: 1000, Burst: 2}
	st := slow.NewState()
	if d := slow.Apply(st, 0, algo.Request{N: 2}); !d.Allowed {
		t.Fatalf("first grant denied: %+v", d)
	}
	for _, n := range []int64{2, 3} { // a denial and a request that never fits
		d := fast.Apply(st, 1000, algo.Request{N: n})
		if d.Allowed {
			t.Fatalf("N=%d granted: %+v", n, d)
		}
		if got, want := d.ResetAfter, 19*time.Millisecond; got != want {
			t.Errorf("N=%d: ResetAfter %v, want %v (the stored TAT, 20 ms, less now)", n, got, want)
		}
	}
	// Just before the stored TAT the state still denies what a fresh one grants.
	if d := fast.Apply(st, 19_999, algo.Request{N: 2}); d.Allowed {
		t.Errorf("at 19.999 ms: granted %+v, want a denial (not yet fresh)", d)
	}
}

// TestGCRABackwardsAfterChange: a refund under the old config moves the state's last write
// to 20.313 ms; the config then has half the rate and a Burst of 2, and the clock steps back
// to 9.844 ms. The rescaled TAT, extrapolated back from the write at the new spacing, let a
// permit act at 9.844 ms, 9 in 9.844 ms where the looser config allows 8 + 100/s·9.844 ms.
// The decision is now made at the write's instant (found by FuzzModel).
func TestGCRABackwardsAfterChange(t *testing.T) {
	t.Parallel()
	a, b := algo.GCRA{Rate: 100, Burst: 8}, algo.GCRA{Rate: 50, Burst: 2}
	st := a.NewState()
	a.Apply(st, 0, algo.Request{N: 8, MaxWait: 400 * time.Millisecond})
	d := a.Apply(st, 0, algo.Request{N: 8, MaxWait: 400 * time.Millisecond})
	a.Refund(st, 20_313, 8, d.At)
	got := b.Apply(st, 9_844, algo.Request{N: 1, MaxWait: 400 * time.Millisecond})
	if !got.Allowed || got.At < 20_313 {
		t.Errorf("after the step back: %+v, want a grant acting at or after the last write (20.313 ms)", got)
	}
}
