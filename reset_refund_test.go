package limiter_test

import (
	"context"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/resetmark"
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

// TestResetQueuedCancelAddsNothing: a reservation still queued at a Reset acts after it, on
// permits the new state never counted; cancelled after the Reset, its refund goes to the
// new state. What Limiter.Reset promises: the key then admits no more than a twin key
// whose reservation was not cancelled and whose caller used its permits (the twin's
// grants plus those permits), at every instant over twice the algorithm's horizon.
func TestResetQueuedCancelAddsNothing(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t).Client(t)
	ctx := context.Background()
	queued := 0
	for _, a := range algo.Samples() {
		clk := clockx.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
		for name, s := range adminStores(t, clk, c) {
			apply := func(key string, req algo.Request) algo.Decision {
				d, err := s.Apply(ctx, key, a, req)
				if err != nil {
					t.Fatalf("%s, %v: %v", name, a, err)
				}
				return d
			}
			drain := func(key string) (n int64) {
				for range 64 {
					if !apply(key, algo.Request{N: 1}).Allowed {
						break
					}
					n++
				}
				return n
			}
			drain("k")
			drain("twin")
			const n = 2
			rk, rt := apply("k", algo.Request{N: n, MaxWait: time.Hour}), apply("twin", algo.Request{N: n, MaxWait: time.Hour})
			if rk != rt {
				t.Fatalf("%s, %v: the two keys' reservations differ: %+v, %+v", name, a, rk, rt)
			}
			if !rk.Allowed || rk.Wait <= 0 {
				continue // nothing queued under this algorithm
			}
			queued++
			clk.Add(time.Microsecond)
			for _, key := range []string{"k", "twin"} {
				if err := s.(interface {
					Reset(context.Context, string, ...algo.Algorithm) error
				}).Reset(ctx, key, a); err != nil {
					t.Fatal(err)
				}
			}
			clk.Add(time.Microsecond)
			gk, gt := drain("k"), drain("twin")
			if err := s.Refund(ctx, "k", a, n, rk.At); err != nil {
				t.Fatalf("%s, %v: refund: %v", name, a, err)
			}
			step := time.Duration(resetmark.Span(a)/32+1) * time.Microsecond
			for i := range 40 {
				gk, gt = gk+drain("k"), gt+drain("twin")
				if gk > gt+n {
					t.Fatalf("%s, %v: step %d: %d grants after the Reset with the queued reservation cancelled, %d without (plus its %d permits)",
						name, a, i, gk, gt, n)
				}
				clk.Add(step)
			}
		}
	}
	if queued == 0 {
		t.Fatal("no algorithm queued a reservation: the test proved nothing")
	}
}
