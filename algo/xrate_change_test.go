package algo

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// TestBucketsChangeNeverAdmitMoreThanXTimeRate runs TokenBucket and GCRA beside
// golang.org/x/time/rate through rate changes (SetLimitAt), lower bursts (SetBurstAt) and
// a clock that steps back. The semantics differ there by design, so the test asserts the
// safety bound instead of equality: the buckets never admit a request x/time/rate denies.
//
//   - A store cannot touch every key when the rate changes: a key counts the span since its
//     last write at the lower of its old and new rates, where x/time/rate counts the old
//     rate up to the change and the new one after (and GCRA rescales its TAT likewise).
//     A key sees only the rate of its last write and the current one, not a lower rate set
//     and replaced while it was idle: the test changes the rate at most once between two
//     writes of the buckets.
//   - x/time/rate moves its last instant back with the clock, and so counts the span again
//     when the clock returns; the buckets never go back.
//   - A burst raised: once the bucket is full under the burst of its last write, the store
//     expires the key (its fresh instant under that config has passed), so it starts full
//     at the new burst, where x/time/rate keeps the old burst's tokens and refills from
//     there. The test only lowers bursts (TestRateChangeNeverOverAdmits in the root package
//     checks that a raise on a bucket that is not full adds nothing).
//
// When x/time/rate admits and a bucket denies, the bucket is made to take the same permits
// (a reservation that may wait as long as it takes), so that it never holds more than
// x/time/rate and the bound stays meaningful.
func TestBucketsChangeNeverAdmitMoreThanXTimeRate(t *testing.T) {
	t.Parallel()
	var allowed, stricter, changes int
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0xc4a9e))
		pick := func() float64 { return math.Ldexp(1, rng.IntN(10)-2) } // 1/4 … 128 per second: GCRA exact
		r, burst := pick(), int64(1+rng.IntN(8))
		tb, gc := TokenBucket{Rate: r, Burst: burst}, GCRA{Rate: r, Burst: burst}
		lim := rate.NewLimiter(rate.Limit(r), int(burst))
		st, gs := tb.NewState(), gc.NewState()
		now := int64(1_700_000_000_000_000)
		changed := false // the rate changed since the buckets' last write
		for step := 0; step < 1500; step++ {
			switch x := rng.IntN(20); {
			case x < 2:
				now -= rng.Int64N(int64(2e6 / r))
			case x < 12:
				now += rng.Int64N(int64(2e6/r) + 1)
			}
			at := time.UnixMicro(now)
			switch x := rng.IntN(10); {
			case x == 0:
				if changed {
					continue // see above
				}
				changed = true
				r = pick()
				lim.SetLimitAt(at, rate.Limit(r))
				tb.Rate, gc.Rate = r, r
				changes++
			case x == 1:
				b := int64(1 + rng.IntN(8))
				if b >= burst {
					continue // only lowered, see above
				}
				burst = b
				lim.SetBurstAt(at, int(b))
				tb.Burst, gc.Burst = b, b
				changes++
			default:
				n := 1 + rng.Int64N(burst)
				tokens := lim.TokensAt(at)
				want := lim.AllowN(at, int(n))
				wrote := true
				for _, p := range []struct {
					a  Algorithm
					st State
				}{{tb, st}, {gc, gs}} {
					d := p.a.Apply(p.st, now, Request{N: n})
					switch {
					case d.Allowed && !want && tokens < float64(n)-1e-9:
						t.Fatalf("seed %d step %d: %v admitted %d where x/time/rate (%v tokens) denies", seed, step, p.a, n, tokens)
					case !d.Allowed && want:
						stricter++
						if g := p.a.Apply(p.st, now, Request{N: n, MaxWait: Forever}); !g.Allowed {
							t.Fatalf("seed %d step %d: %v: the reservation was refused: %+v", seed, step, p.a, g)
						}
					case d.Allowed:
						allowed++
					}
					wrote = wrote && (d.Allowed || want)
				}
				if wrote {
					changed = false
				}
			}
		}
	}
	if stricter == 0 || allowed == 0 {
		t.Errorf("%d admissions, %d stricter: the timelines miss what they test", allowed, stricter)
	}
	t.Logf("%d admissions, %d stricter than x/time/rate, %d changes", allowed, stricter, changes)
}
