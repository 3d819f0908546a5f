package algo

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// applyTo is the reference for applyFast, the usual grant written out: on every state and
// request, including those applyFast hands over, both leave the same bits in the state and
// the Decision.

func sameBits(a, b tokenBucketState) bool {
	return math.Float64bits(a.tokens) == math.Float64bits(b.tokens) && a.last == b.last &&
		a.act == b.act && math.Float64bits(a.mark) == math.Float64bits(b.mark)
}

// checkFast applies req at now to copies of s through applyFast and applyTo and fails on
// any difference; it returns applyFast's state.
func checkFast(t *testing.T, c TokenBucket, s tokenBucketState, now int64, req Request) tokenBucketState {
	t.Helper()
	fast, ref := s, s
	df := c.Apply(&fast, now, req) // applyFast, or applyTo when it hands over
	dr := c.applyTo(&ref, now, req)
	if df != dr || !sameBits(fast, ref) {
		t.Fatalf("%v on %+v at %d, %+v:\napplyFast: %+v, %+v\napplyTo:   %+v, %+v", c, s, now, req, df, fast, dr, ref)
	}
	return fast
}

func TestTokenBucketFastMatchesApplyTo(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 1))
	rates := []float64{1e9, 1e6 / 7, 1000, 10, 3, 0.5, 0.01, 1e-6, 0x1p-1000, 0x1p-1001, 2e9, math.Inf(1)}
	bursts := []int64{1, 2, 3, 5, 100, 5000, 1 << 30, 1 << 53, 1<<53 + 1}
	const base = 1_700_000_000_000_000 // µs, 2023
	for _, r := range rates {
		for _, b := range bursts {
			c := TokenBucket{Rate: r, Burst: b}
			// Timelines: the state only the transitions make, around the grant/wait edge.
			for run := 0; run < 20; run++ {
				var s tokenBucketState
				now := int64(base)
				if run%5 == 4 {
					now = 1<<52 - 50 // the edge of rollsBack's range
				}
				for i := 0; i < 200; i++ {
					switch rng.IntN(4) {
					case 0: // the same µs
					case 1:
						now += 1 + rng.Int64N(3)
					case 2:
						now += rng.Int64N(int64(math.Min(2e6/r, 1e10)) + 1)
					case 3:
						now -= rng.Int64N(5) // a clock stepping back
					}
					req := Request{N: 1 + rng.Int64N(min(b, 4))}
					if rng.IntN(8) == 0 {
						req.N = min(b, 1<<40) // the whole bucket
					}
					if rng.IntN(6) == 0 {
						req.MaxWait = time.Duration(rng.Int64N(int64(2 * time.Second)))
					}
					s = checkFast(t, c, s, now, req)
					if rng.IntN(20) == 0 {
						if d := c.applyTo(&s, now, req); d.Allowed {
							c.Refund(&s, now, req.N, d.At)
						}
					}
				}
			}
			// Crafted states: tokens anywhere, act around now, marks of this and other rates.
			for i := 0; i < 400; i++ {
				now := int64(base) + rng.Int64N(10)
				s := tokenBucketState{
					tokens: []float64{0, 1, float64(b), float64(b) - 0.5, float64(b) + 3, -2.5, rng.Float64() * float64(b), math.NaN()}[rng.IntN(8)],
					last:   now - []int64{0, 1, 2, 1000, 1_000_000, 3_000_000, -1}[rng.IntN(7)],
					act:    now + []int64{0, -1, 1, -1000, 5000, -now, -now - 7}[rng.IntN(7)],
					mark:   []float64{r, -r, 0, 2 * r, -r / 2, olderVersion, -olderVersion}[rng.IntN(7)],
				}
				checkFast(t, c, s, now, Request{N: []int64{1, 2, b, b + 1, 0}[rng.IntN(5)]})
			}
		}
	}
}

// TestRollsBack compares rollsBack with the expression it stands for where its bracket
// test is closest to deciding wrongly: g + 1 next to the quotient, for many rates.
func TestRollsBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 2))
	const now = 1_700_000_000_000_000
	for i := 0; i < 200_000; i++ {
		var r float64
		switch i % 4 {
		case 0:
			r = math.Exp(rng.Float64()*60 - 30) // about 1e-13 to 1e13
		case 1:
			r = 1e6 / float64(1+rng.IntN(5000))
		case 2:
			r = float64(1 + rng.IntN(1000))
		default:
			r = math.Min(1e9, math.Ldexp(1, rng.IntN(60)-20))
		}
		c := TokenBucket{Rate: r, Burst: 1 << 53}
		n := 1 + rng.Int64N(1000)
		x := math.Floor(float64(n) / r * 1e6)
		g := int64(1 + rng.IntN(3))
		if x < now-1 {
			g = int64(x) + rng.Int64N(5) - 2 // the gap at the boundary, ± 2
		}
		if g < 1 {
			g = 1
		}
		prev := int64(now) - g
		want := float64(now)-c.rollback(n) >= float64(prev)
		if got := c.rollsBack(now, prev, n); got != want {
			t.Fatalf("rollsBack(%d, %d, %d) under Rate %v = %v, want %v", int64(now), prev, n, r, got, want)
		}
	}
}

func TestOneMicro(t *testing.T) {
	if got, want := math.Float64bits(oneMicro), math.Float64bits(seconds(1)); got != want {
		t.Fatalf("oneMicro = %x, want seconds(1) = %x", got, want)
	}
}
