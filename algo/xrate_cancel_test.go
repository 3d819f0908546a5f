package algo

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// xrateTick is the clock step of the CancelAt differential: 1/64 s. With rates that are
// powers of two from 1/2 to 64 per second, every token count is a dyadic fraction and every
// wait a whole number of µs, so x/time/rate (ns) and the buckets (µs) compute the same
// instants exactly, and the refunds must match to the bit.
const xrateTick = 15625 // µs

// TestBucketsCancelMatchXTimeRate runs TokenBucket and GCRA beside golang.org/x/time/rate
// on random timelines of AllowN, ReserveN and CancelAt of random outstanding reservations,
// out of order (not just the latest). Every decision must be identical (allowed, the wait
// to the µs, Remaining as x/time/rate's tokens rounded down), and every cancel must give
// back exactly what CancelAt gives back, except where the buckets are stricter by design:
// they may give back less, never more, and the timeline then stops being compared.
//
// x/time/rate rolls its lastEvent back by n/rate when the latest reservation is cancelled,
// which is where the one before it acts only if the queue was never partly freed; after a
// CancelAt gave part of an earlier reservation back, or when two act at one instant, it
// rolls back too far, and a later CancelAt restores more than its n (5 granted, 7 given
// back). Likewise, a grant after such a partial refund may act before the latest
// reservation, and x/time/rate moves lastEvent back to it. The buckets keep act at the
// latest instant and roll it back only while every outstanding grant acts n/Rate after the
// one before it; they do not tell every case apart, so they also give back less in some
// where x/time/rate was right (after the latest was cancelled when the one before it had
// already acted, say).
func TestBucketsCancelMatchXTimeRate(t *testing.T) {
	t.Parallel()
	type pending struct {
		res     *rate.Reservation
		n, at   int64 // at: the bucket's Decision.At, µs
		gcraAt  int64
		granted time.Time
	}
	var compared, cancels, partial, diverged, overn int
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0xca9ce1))
		r := math.Ldexp(1, rng.IntN(8)-1) // 1/2 … 64 per second
		burst := int64(1 + rng.IntN(10))
		tb := TokenBucket{Rate: r, Burst: burst}
		gc := GCRA{Rate: r, Burst: burst}
		lim := rate.NewLimiter(rate.Limit(r), int(burst))
		st, gs := tb.NewState().(*tokenBucketState), gc.NewState().(*gcraState)
		// tokens returns both buckets' tokens at now (GCRA's as the token bucket it equals).
		tokens := func(now int64) (float64, float64) {
			b, _ := tb.advance(st, now)
			return b, float64(burst) - (gc.tat(gs, now)-float64(now))/gc.interval()
		}
		now := int64(1_700_000_000_000_000)
		var out []pending
	timeline:
		for step := 0; step < 2000; step++ {
			now += xrateTick * rng.Int64N(int64(64/r)+2)
			at := time.UnixMicro(now)
			// Reservations whose time has come act: CancelAt does nothing for them.
			kept := out[:0]
			for _, p := range out {
				if p.at >= now {
					kept = append(kept, p)
				}
			}
			out = kept
			compared++
			switch x := rng.IntN(10); {
			case x < 3 && len(out) > 0:
				i := rng.IntN(len(out))
				p := out[i]
				out = append(out[:i], out[i+1:]...)
				x0 := lim.TokensAt(at)
				b0, g0 := tokens(now)
				p.res.CancelAt(at)
				tb.Refund(st, now, p.n, p.at)
				gc.Refund(gs, now, p.n, p.gcraAt)
				cancels++
				xd := lim.TokensAt(at) - x0
				b1, g1 := tokens(now)
				bd, gd := b1-b0, g1-g0
				if xd > 0 && xd < float64(p.n) {
					partial++
				}
				if bd > float64(p.n) || gd > float64(p.n) || bd > xd || gd > xd {
					t.Fatalf("seed %d step %d (rate %v, burst %d): cancel of %d acting at %d gave back %v (bucket), %v (gcra); x/time/rate %v",
						seed, step, r, burst, p.n, p.at, bd, gd, xd)
				}
				if bd != xd || gd != xd {
					diverged++ // x/time/rate gave back more: see above
					if xd > float64(p.n) {
						overn++
					}
					break timeline
				}
			case x < 6:
				n := 1 + rng.Int64N(burst)
				res := lim.ReserveN(at, int(n))
				d := tb.Apply(st, now, Request{N: n, MaxWait: Forever})
				g := gc.Apply(gs, now, Request{N: n, MaxWait: Forever})
				if !res.OK() || !d.Allowed || !g.Allowed {
					t.Fatalf("seed %d step %d: reservation refused: x/time %v, bucket %+v, gcra %+v", seed, step, res.OK(), d, g)
				}
				if want := res.DelayFrom(at); d.Wait != want || g.Wait != want {
					t.Fatalf("seed %d step %d (rate %v, burst %d): ReserveN(%d): x/time waits %v, bucket %v, gcra %v",
						seed, step, r, burst, n, want, d.Wait, g.Wait)
				}
				out = append(out, pending{res: res, n: n, at: d.At, gcraAt: g.At})
			default:
				n := 1 + rng.Int64N(burst)
				x0 := lim.TokensAt(at)
				want := lim.AllowN(at, int(n))
				d := tb.Apply(st, now, Request{N: n})
				g := gc.Apply(gs, now, Request{N: n})
				if d.Allowed != want || g.Allowed != want {
					t.Fatalf("seed %d step %d (rate %v, burst %d): AllowN(%d) with %v tokens: x/time %v, bucket %v, gcra %v",
						seed, step, r, burst, n, x0, want, d.Allowed, g.Allowed)
				}
				rem := int64(max(0, math.Floor(lim.TokensAt(at))))
				if d.Remaining != rem || g.Remaining != rem {
					t.Fatalf("seed %d step %d: Remaining: x/time %d, bucket %d, gcra %d", seed, step, rem, d.Remaining, g.Remaining)
				}
			}
		}
	}
	if partial == 0 || cancels < 10*diverged {
		t.Errorf("%d cancels, %d restored part, %d timelines diverged: the timelines miss what they test", cancels, partial, diverged)
	}
	t.Logf("%d steps compared, %d cancels (%d restored part), %d timelines stopped where x/time/rate gives back more (%d: more than n)",
		compared, cancels, partial, diverged, overn)
}

// TestBucketsCancelNeverOverAdmit checks the bound behind the refund rule on random
// timelines of reservations, immediate grants and out-of-order cancels (before the grant
// acts, as Reservation.Cancel does): the permits of the grants that act (not cancelled) in
// any span of L µs never exceed Burst + Rate·L (plus 1 µs of rounding per wait), for the
// token bucket, GCRA and the leaky bucket's queue (Burst: the largest N asked; its meter,
// which admits beside the queue up to Capacity, is left out).
func TestBucketsCancelNeverOverAdmit(t *testing.T) {
	t.Parallel()
	type grant struct {
		n, at     int64
		cancelled bool
	}
	for seed := uint64(1); seed <= 300; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0x5afe))
		r := []float64{0.5, 1, 3.7, 10, 64, 1000}[rng.IntN(6)]
		burst := int64(1 + rng.IntN(8))
		for _, a := range []Algorithm{TokenBucket{Rate: r, Burst: burst}, GCRA{Rate: r, Burst: burst},
			LeakyBucket{Rate: r, Capacity: 50 * burst}} {
			st := a.NewState()
			now := int64(1_700_000_000_000_000)
			var gs []grant
			scale := int64(1e6 / r)
			for step := 0; step < 400; step++ {
				if rng.IntN(3) == 0 {
					now += rng.Int64N(scale + 1)
				}
				var open []int // outstanding: not cancelled, not yet acting
				for i, g := range gs {
					if !g.cancelled && g.at > now {
						open = append(open, i)
					}
				}
				switch x := rng.IntN(10); {
				case x < 4 && len(open) > 0:
					i := open[len(open)-1-rng.IntN(min(len(open), 3))]
					if rng.IntN(2) == 0 {
						i = open[rng.IntN(len(open))]
					}
					a.Refund(st, now, gs[i].n, gs[i].at)
					gs[i].cancelled = true
				default:
					req := Request{N: 1 + rng.Int64N(burst), MaxWait: Forever}
					if _, queue := a.(LeakyBucket); x == 9 && !queue {
						req.MaxWait = 0 // the leaky bucket's meter does not queue: shaping only
					}
					if d := a.Apply(st, now, req); d.Allowed {
						gs = append(gs, grant{n: req.N, at: d.At})
					}
				}
			}
			var acts []grant
			for _, g := range gs {
				if !g.cancelled {
					acts = append(acts, g)
				}
			}
			slices.SortFunc(acts, func(x, y grant) int { return cmp.Compare(x.at, y.at) })
			for i := range acts {
				var sum int64
				for j := i; j < len(acts); j++ {
					sum += acts[j].n
					span := float64(acts[j].at-acts[i].at+int64(j-i)) / 1e6
					if bound := float64(burst) + r*span; float64(sum) > bound+1e-9 {
						t.Fatalf("seed %d, %v: %d permits act within %d µs, bound %.3f", seed, a, sum, acts[j].at-acts[i].at, bound)
					}
				}
			}
		}
	}
}
