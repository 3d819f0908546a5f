package algo_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

// wrapper is a custom wrapper, outside package algo, that decides as its inner algorithm
// and says so with Unwrap only.
type wrapper struct{ algo.Algorithm }

func (w wrapper) Unwrap() algo.Algorithm { return w.Algorithm }

// opaque hides its inner algorithm: it has no Unwrap.
type opaque struct{ algo.Algorithm }

// TestCapabilitiesLookThroughWrappers: Named and a custom wrapper with Unwrap keep the
// capabilities of what they wrap; a Penalty states its own (WritesOnDenial, and Chargeable
// when its Rule is), also when wrapped; an
// algorithm that states nothing, and one hidden without Unwrap, have none.
func TestCapabilitiesLookThroughWrappers(t *testing.T) {
	t.Parallel()
	pen := algo.Penalty{Rule: algo.TokenBucket{Rate: 1, Burst: 1}, Block: time.Second}
	for _, a := range everyAlgorithm() {
		want := algo.CapabilitiesOf(a)
		if want == 0 {
			t.Errorf("%v states no capability", a)
		}
		for _, w := range []algo.Algorithm{algo.Named(a, "n"), wrapper{a}, algo.Named(wrapper{algo.Named(a, "x")}, "y")} {
			if got := algo.CapabilitiesOf(w); got != want {
				t.Errorf("CapabilitiesOf(%v) = %b, want %b as %v", w, got, want, a)
			}
		}
		if got := algo.CapabilitiesOf(opaque{a}); got != 0 {
			t.Errorf("an algorithm without Unwrap or Capabilities has %b, want none", got)
		}
	}
	for _, a := range []algo.Algorithm{pen, algo.Named(pen, "p"), wrapper{pen}} {
		if got := algo.CapabilitiesOf(a); got != algo.WritesOnDenial|algo.Chargeable {
			t.Errorf("CapabilitiesOf(%v) = %b, want WritesOnDenial (a Penalty's denials write) and Chargeable (as its Rule)", a, got)
		}
	}
	// A Penalty is Chargeable only when its Rule is (a custom rule here, opaque: none).
	penOpaque := algo.Penalty{Rule: opaque{algo.TokenBucket{Rate: 1, Burst: 1}}, Block: time.Second}
	if got := algo.CapabilitiesOf(penOpaque); got != algo.WritesOnDenial {
		t.Errorf("CapabilitiesOf(%v) = %b, want WritesOnDenial only: its Rule states nothing", penOpaque, got)
	}
	if got := algo.CapabilitiesOf(nil); got != 0 {
		t.Errorf("CapabilitiesOf(nil) = %b, want none", got)
	}
	want := map[string]algo.Capability{
		"fixed-window":    algo.Leasable | algo.LeaseEndsAtReset | algo.DenialCacheable | algo.OverflowSafe | algo.Exact | algo.Chargeable,
		"token-bucket":    algo.Leasable | algo.DenialCacheable | algo.OverflowSafe | algo.Exact | algo.Chargeable,
		"smooth-bursty":   algo.DenialCacheable | algo.Chargeable,
		"smooth-warmup":   algo.DenialCacheable | algo.Chargeable,
		"gcra":            algo.Leasable | algo.DenialCacheable | algo.OverflowSafe | algo.Exact | algo.Chargeable,
		"leaky-bucket":    algo.Leasable | algo.DenialCacheable | algo.OverflowSafe | algo.Exact | algo.Chargeable,
		"sliding-log":     algo.Leasable | algo.DenialCacheable | algo.OverflowSafe | algo.Exact | algo.Chargeable,
		"sliding-counter": algo.Leasable | algo.DenialCacheable | algo.OverflowSafe | algo.Exact | algo.Chargeable,
	}
	for _, a := range everyAlgorithm() {
		if w, ok := want[a.Name()]; !ok || algo.CapabilitiesOf(a) != w {
			t.Errorf("CapabilitiesOf(%v) = %b, want %b", a, algo.CapabilitiesOf(a), w)
		}
	}
}

// TestPenaltyRefusesNestedPenalty (issue 21, item 4): a Penalty whose Rule is or wraps a
// Penalty kept both penalties in one Redis key while the Go reference kept two, so the
// stores decided differently (Redis admitted 40 where Go admitted 9). Validate refuses it,
// looking through Named and any Unwrap chain.
func TestPenaltyRefusesNestedPenalty(t *testing.T) {
	t.Parallel()
	in := algo.Penalty{Rule: algo.FixedWindow{Limit: 2, Window: time.Second}, Block: time.Second}
	for _, rule := range []algo.Algorithm{
		in, &in, algo.Named(in, "inner"), wrapper{in}, algo.Named(wrapper{algo.Named(in, "a")}, "b"),
	} {
		p := algo.Penalty{Rule: rule, Block: 2 * time.Second, Growth: 2, MaxBlock: time.Minute}
		err := p.Validate()
		if !errors.Is(err, algo.ErrInvalidConfig) || !strings.Contains(err.Error(), "another Penalty") {
			t.Errorf("Penalty{Rule: %v}.Validate() = %v, want ErrInvalidConfig naming the nested Penalty", rule, err)
		}
		if err := algo.Named(p, "outer").Validate(); !errors.Is(err, algo.ErrInvalidConfig) {
			t.Errorf("Named(Penalty{Rule: %v}).Validate() = %v, want ErrInvalidConfig", rule, err)
		}
	}
	// Wrapped rules without a Penalty in their chain are fine.
	for _, rule := range []algo.Algorithm{algo.Named(algo.TokenBucket{Rate: 1, Burst: 1}, "tb"), wrapper{algo.GCRA{Rate: 1, Burst: 1}}} {
		if err := (algo.Penalty{Rule: rule, Block: time.Second}).Validate(); err != nil {
			t.Errorf("Penalty{Rule: %v}.Validate() = %v, want nil", rule, err)
		}
	}
}
