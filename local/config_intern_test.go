package local

import (
	"context"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

// wrappedConfig is a config type that can be compared, holding one that cannot: comparing
// two of its values with == panics.
type wrappedConfig struct{ algo.Algorithm }

type taggedBucket struct {
	algo.TokenBucket
	tags []string
}

// TestIncomparableValueConfig: an entry written under a config whose value cannot be
// compared (though its type can) expires like any other: once fresh it starts afresh, as
// under any config that differs, and no comparison panics.
func TestIncomparableValueConfig(t *testing.T) {
	t.Parallel()
	s, clk := newTestStore(t)
	ctx := context.Background()
	a := wrappedConfig{taggedBucket{TokenBucket: algo.TokenBucket{Rate: 1, Burst: 2}}}
	for i, want := range []int64{1, 0} {
		d, err := s.Apply(ctx, "k", a, algo.Request{N: 1})
		if err != nil || !d.Allowed || d.Remaining != want {
			t.Fatalf("call %d: %+v %v; want granted, Remaining %d", i, d, err, want)
		}
	}
	clk.Add(10 * time.Second) // past the fresh instant
	d, err := s.Apply(ctx, "k", a, algo.Request{N: 1})
	if err != nil || !d.Allowed || d.Remaining != 1 {
		t.Fatalf("after the fresh instant: %+v %v; want granted, Remaining 1", d, err)
	}
}

// TestExistingKeyAllocatesNothing: Apply on a key that has an entry allocates nothing, for
// a token bucket (interned config, state inside the entry) and for a config of a custom
// type, which takes the generic path.
func TestExistingKeyAllocatesNothing(t *testing.T) {
	s, _ := newTestStore(t)
	ctx := context.Background()
	for _, a := range []algo.Algorithm{
		algo.TokenBucket{Rate: 1e9, Burst: 1 << 30},
		algo.Named(algo.GCRA{Rate: 1e6, Burst: 1 << 30}, "named"),
	} {
		if _, err := s.Apply(ctx, "k", a, algo.Request{N: 1}); err != nil {
			t.Fatal(err)
		}
		if n := testing.AllocsPerRun(100, func() { _, _ = s.Apply(ctx, "k", a, algo.Request{N: 1}) }); n != 0 {
			t.Errorf("%v: %v allocations per Apply, want 0", a, n)
		}
	}
}
