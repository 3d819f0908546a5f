package limiter_test

import (
	"context"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/redistest"
)

// TestResetDropsEarlierRefunds: a key's grants, a Reset, new grants, then refunds of the
// grants made before the Reset (a Reservation's Cancel, say). The refunds must give the
// new state nothing: the key then answers exactly as a twin that only saw the new grants
// (before the Reset marks, a fixed window of 10 granted 10 more in its window). Every
// algorithm of algo.Samples, on the local store and on Redis; a refund of a grant made
// after the Reset still counts (the last step).
func TestResetDropsEarlierRefunds(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t).Client(t)
	ctx := context.Background()
	for _, a := range algo.Samples() {
		clk := clockx.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
		for name, s := range adminStores(t, clk, c) {
			apply := func(key string) algo.Decision {
				d, err := s.Apply(ctx, key, a, algo.Request{N: 1})
				if err != nil {
					t.Fatalf("%s, %v: %v", name, a, err)
				}
				return d
			}
			drain := func(key string) (ats []int64) {
				for range 64 {
					d := apply(key)
					if !d.Allowed {
						break
					}
					ats = append(ats, d.At)
				}
				return ats
			}
			refund := func(key string, at int64) {
				if err := s.Refund(ctx, key, a, 1, at); err != nil {
					t.Fatalf("%s, %v: refund: %v", name, a, err)
				}
			}
			old := drain("k")
			clk.Add(time.Microsecond)
			if err := s.(interface {
				Reset(context.Context, string, ...algo.Algorithm) error
			}).Reset(ctx, "k", a); err != nil {
				t.Fatal(err)
			}
			clk.Add(time.Microsecond)
			fresh, twin := drain("k"), drain("twin")
			if len(fresh) != len(twin) {
				t.Fatalf("%s, %v: %d grants after the Reset, %d on a new key", name, a, len(fresh), len(twin))
			}
			for _, at := range old {
				refund("k", at)
			}
			if dk, dt := apply("k"), apply("twin"); dk != dt {
				t.Errorf("%s, %v: after refunds of grants made before the Reset: %+v, a key without them: %+v", name, a, dk, dt)
			}
			if len(fresh) > 0 { // a grant of the new state is refunded as on any key
				refund("k", fresh[0])
				refund("twin", twin[0])
				if dk, dt := apply("k"), apply("twin"); dk != dt {
					t.Errorf("%s, %v: after a refund of a grant made after the Reset: %+v, on the twin: %+v", name, a, dk, dt)
				}
			}
		}
	}
}
