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
