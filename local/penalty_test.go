package local

import (
	"context"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
)

// unwrapper is a custom wrapper: it decides as its inner algorithm and says so with Unwrap
// only.
type unwrapper struct{ algo.Algorithm }

func (w unwrapper) Unwrap() algo.Algorithm { return w.Algorithm }

// TestPenaltyBlockSurvivesSweep: a denial that starts a block writes the state, so the
// entry stays until the block (and what the penalty remembers) is over, although the rule
// alone would be fresh again long before. A sweep in between must not forget the block,
// also when the Penalty is wrapped (algo.Named, a custom wrapper with Unwrap).
func TestPenaltyBlockSurvivesSweep(t *testing.T) {
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, err := New(WithClock(clk), WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	a := algo.Penalty{Rule: algo.FixedWindow{Limit: 1, Window: time.Second}, Block: time.Hour}
	for _, named := range []algo.Algorithm{a, algo.Named(a, "x"), unwrapper{a}} {
		for i, want := range []bool{true, false} {
			if d, err := s.Apply(ctx, "k", named, algo.Request{N: 1}); err != nil || d.Allowed != want {
				t.Fatalf("%v call %d: %+v %v", named, i, d, err)
			}
		}
		clk.Add(time.Minute) // the window is long over, the block is not
		s.Sweep()
		if d, _ := s.Apply(ctx, "k", named, algo.Request{N: 1}); d.Allowed || d.RetryAfter != 59*time.Minute {
			t.Fatalf("%v: %+v, want blocked for 59 min more", named, d)
		}
		clk.Add(time.Hour)
	}
}
