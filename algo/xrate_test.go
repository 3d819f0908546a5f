package algo_test

import (
	"math"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"golang.org/x/time/rate"
)

// TestTokenBucketMatchesXTimeRate runs algo.TokenBucket and golang.org/x/time/rate on the
// same random timelines (clock forward only) and requires the same admissions, the same
// Remaining (x/time/rate's tokens rounded down) and, for reservations, the same delay up
// to rounding: x/time/rate truncates to a nanosecond, the token bucket rounds up to a µs.
func TestTokenBucketMatchesXTimeRate(t *testing.T) {
	t.Parallel()
	var compared int
	for seed := int64(1); seed <= 30; seed++ {
		r := seeded(t, seed)
		tb := genConfig(r, algo.TokenBucket{}).(algo.TokenBucket)
		lim := rate.NewLimiter(rate.Limit(tb.Rate), int(tb.Burst))
		st := tb.NewState()
		now := r.Int63n(sec * sec)
		for i, p := range genOps(r, tb, 2000, false, false, false) {
			now += p.dt
			if p.n <= 0 || p.n > tb.Burst {
				continue // x/time/rate answers these differently (n == 0 is allowed there)
			}
			at := time.UnixMicro(now)
			if r.Intn(4) == 0 {
				// A reservation that may wait as long as it takes.
				d := tb.Apply(st, now, algo.Request{N: p.n, MaxWait: algo.Forever})
				res := lim.ReserveN(at, int(p.n))
				if !d.Allowed || !res.OK() {
					t.Fatalf("seed %d step %d: reservation refused: %+v, x/time/rate OK=%v", seed, i, d, res.OK())
				}
				if diff := d.Wait - res.DelayFrom(at); diff < -time.Nanosecond || diff > time.Microsecond {
					t.Fatalf("seed %d step %d: Wait %v, x/time/rate delay %v", seed, i, d.Wait, res.DelayFrom(at))
				}
			} else {
				d := tb.Apply(st, now, algo.Request{N: p.n})
				if got, want := d.Allowed, lim.AllowN(at, int(p.n)); got != want {
					t.Fatalf("seed %d step %d (now=%d, N=%d): Allowed = %v, x/time/rate %v", seed, i, now, p.n, got, want)
				}
				want := int64(math.Max(0, math.Floor(lim.TokensAt(at))))
				if got := d.Remaining; got != want {
					t.Fatalf("seed %d step %d: Remaining = %d, x/time/rate tokens %v", seed, i, got, lim.TokensAt(at))
				}
			}
			compared++
		}
	}
	t.Logf("%d decisions compared", compared)
}
