package limiter_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
)

// TestTokenBucketMatchesXRate drives algo.TokenBucket on the local store and
// golang.org/x/time/rate with the same random timeline and requires the same decision at
// every step, and the same remaining tokens. algo.TokenBucket performs x/time/rate's float64
// operations on the same instants, so the two must agree exactly, not just on average.
func TestTokenBucketMatchesXRate(t *testing.T) {
	t.Parallel()
	const steps = 6000
	for seed := uint64(1); seed <= 12; seed++ {
		rng := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
		// Non-round rates from 0.05/s to 5000/s (log-uniform), bursts from 1 to 40.
		r := math.Exp(math.Log(0.05) + rng.Float64()*(math.Log(5000)-math.Log(0.05)))
		burst := 1 + rng.IntN(40)
		t.Run("", func(t *testing.T) {
			t.Parallel()
			checkXRate(t, seed, rng, r, burst, steps)
		})
	}
}

func checkXRate(t *testing.T, seed uint64, rng *rand.Rand, r float64, burst, steps int) {
	t.Helper()
	ctx := context.Background()
	t0 := start.Add(time.Duration(rng.Int64N(1e12)) * time.Microsecond)
	clk := clockx.NewFake(t0)
	st := teststore.Local(t, local.WithClock(clk), local.WithSweepInterval(0))
	t.Cleanup(func() { _ = st.Close() })
	l, err := limiter.New(st, algo.TokenBucket{Rate: r, Burst: int64(burst)}, limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	ref := rate.NewLimiter(rate.Limit(r), burst)
	// Step scales so that both the full-bucket and the empty-bucket regimes are visited:
	// up to 3 s, up to 3 refill intervals, up to 1/10 of one.
	scales := []int64{3_000_000, int64(3e6 / r), int64(1e5 / r)}
	var allowed, denied, eligible int // eligible: steps with n ≤ burst
	for step := 0; step < steps; step++ {
		if s := scales[rng.IntN(len(scales))]; s > 0 {
			clk.Add(time.Duration(rng.Int64N(s+1)) * time.Microsecond)
		}
		now := clk.Now()
		n := 1 + rng.IntN(burst+2)
		tokens := ref.TokensAt(now)
		want := ref.AllowN(now, n)
		d, err := l.AllowN(ctx, "k", int64(n))
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != want {
			t.Fatalf("seed %d (rate %v, burst %d), step %d at +%dµs: AllowN(%d) with %.17g tokens: "+
				"limiter allowed %v, x/time/rate allowed %v", seed, r, burst, step,
				now.Sub(t0).Microseconds(), n, tokens, d.Allowed, want)
		}
		after := ref.TokensAt(now)
		if got, want := d.Remaining, int64(max(0, math.Floor(after))); got != want {
			t.Fatalf("seed %d (rate %v, burst %d), step %d: Remaining %d, x/time/rate has %.17g tokens",
				seed, r, burst, step, got, after)
		}
		if n <= burst {
			eligible++
			if d.Allowed {
				allowed++
			} else {
				denied++
			}
		}
	}
	// The timeline must exercise both outcomes, or agreeing proves little.
	if allowed < eligible/10 || denied < eligible/10 {
		t.Fatalf("seed %d (rate %v, burst %d): %d allowed, %d denied of %d steps with n ≤ burst; "+
			"the timeline is too one-sided", seed, r, burst, allowed, denied, eligible)
	}
	t.Logf("seed %d: rate %.6g/s, burst %d: %d allowed, %d denied of %d steps with n ≤ burst",
		seed, r, burst, allowed, denied, eligible)
}

// TestTokenBucketXRateSubNanosecondDeficit is a constructed case the random timelines are
// unlikely to hit. x/time/rate converts a token deficit to a wait truncated to whole
// nanoseconds (durationFromTokens), so AllowN succeeds when the deficit would refill in
// under 1 ns; algo.TokenBucket rounds any deficit up to a 1 µs wait and denies.
//
// Rate 1e6/400.0005 ≈ 2499.996875/s, burst 1: after a grant at t0, x/time/rate holds
// 0.99999875000156246 tokens at t0+400µs; the missing 1.25e-6 token takes 0.5 ns, which
// truncates to no wait.
func TestTokenBucketXRateSubNanosecondDeficit(t *testing.T) {
	t.Parallel()
	t.Skip("known difference in algo.TokenBucket (sub-nanosecond deficits); remove this Skip once " +
		"algo/token_bucket.go treats a deficit that refills in under 1 ns as no wait, as x/time/rate does")
	r := 1e6 / 400.0005
	l, clk := newTest(t, algo.TokenBucket{Rate: r, Burst: 1})
	ref := rate.NewLimiter(rate.Limit(r), 1)
	for _, step := range []time.Duration{0, 400 * time.Microsecond} {
		clk.Add(step)
		tokens := ref.TokensAt(clk.Now())
		want := ref.AllowN(clk.Now(), 1)
		if d := allowN(t, l, "k", 1); d.Allowed != want {
			t.Fatalf("at +%v with %.17g tokens: limiter allowed %v, x/time/rate allowed %v", clk.Now().Sub(start), tokens, d.Allowed, want)
		}
	}
}
