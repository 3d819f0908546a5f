package algo

import (
	"fmt"
	"math"
	"math/rand"
	"strconv"
	"testing"
	"time"
)

// The Lua twins of SmoothBursty and SmoothWarmingUp against their Go transitions, on a
// real Redis (startRedis skips loudly without redis-server, or fails when
// LIMITER_REQUIRE_REDIS is set): random sequences with config changes (Guava's setRate, and
// changes of MaxBurstSeconds, Warmup and ColdFactor), +Inf and extreme rates, time going
// backwards, requests that can never be granted, every kind of MaxWait. Every step
// compares the reply, the stored hash and the TTL.

// smoothSnap is a comparable copy of a smooth state: what the Redis hash holds.
type smoothSnap struct {
	valid             bool
	stored            uint64 // float64 bits
	next              int64
	rate, burst, cold uint64 // float64 bits
	warmup            int64
}

func snapSmooth(st State) smoothSnap {
	s := st.(*smoothState)
	if !s.valid {
		return smoothSnap{}
	}
	return smoothSnap{valid: true, stored: math.Float64bits(s.stored), next: s.next,
		rate: math.Float64bits(s.cfg.rate), burst: math.Float64bits(s.cfg.burst),
		cold: math.Float64bits(s.cfg.cold), warmup: s.cfg.warmup}
}

// parseSmooth reads a smooth hash back; an empty hash is a missing key.
func parseSmooth(h map[string]string, warm bool) (smoothSnap, error) {
	if len(h) == 0 {
		return smoothSnap{}, nil
	}
	want := []string{"stored", "next", "rate", "burst"}
	if warm {
		want = []string{"stored", "next", "rate", "warmup", "cold"}
	}
	if len(h) != len(want) {
		return smoothSnap{}, fmt.Errorf("hash %v: want exactly the fields %v", h, want)
	}
	f := func(k string) (uint64, error) {
		v, err := strconv.ParseFloat(h[k], 64)
		return math.Float64bits(v), err
	}
	var s smoothSnap
	var err error
	s.valid = true
	if s.stored, err = f("stored"); err != nil {
		return s, err
	}
	if s.next, err = strconv.ParseInt(h["next"], 10, 64); err != nil {
		return s, err
	}
	if s.rate, err = f("rate"); err != nil {
		return s, err
	}
	if warm {
		if s.warmup, err = strconv.ParseInt(h["warmup"], 10, 64); err != nil {
			return s, err
		}
		s.cold, err = f("cold")
	} else {
		s.burst, err = f("burst")
	}
	return s, err
}

var (
	smoothLuaRates  = []float64{math.Inf(1), 1e-15, 1e-6, 7e-4, 1.0 / 3, 0.5, 1, 2, 3, 5, 7.5, 10, 33.3, 100, 1e3, 1e6 / 7, 1e6, 1e9, 1e15}
	smoothLuaBursts = []float64{0, 1, 0.5, 2.5, 3.7, 10, 1e-9, 3600, 1e9}
	smoothLuaWarms  = []time.Duration{0, time.Microsecond, 1500 * time.Nanosecond, 250 * time.Millisecond, time.Second,
		4 * time.Second, 10 * time.Second, time.Hour, 1000 * time.Hour}
	smoothLuaColds = []float64{0, 1, 1.5, 2, 3, 4.25, 10, 1e6}
)

// smoothFamily returns 1–3 configs of one kind: the first is the usual one, the others
// are the config changes of the sequence.
func smoothFamily(r *rand.Rand, warm bool) []Scripted {
	fam := make([]Scripted, 1+r.Intn(3))
	for i := range fam {
		rate := luaPick(r, smoothLuaRates)
		if r.Intn(3) == 0 {
			rate = math.Exp(r.Float64()*14 - 5) // an arbitrary float in [6.7e-3, 8.1e3]
		}
		if warm {
			c := SmoothWarmingUp{Rate: rate, Warmup: luaPick(r, smoothLuaWarms), ColdFactor: luaPick(r, smoothLuaColds)}
			if i > 0 && r.Intn(2) == 0 { // most changes are rate changes only
				c = fam[0].(SmoothWarmingUp)
				c.Rate = rate
			}
			fam[i] = c
		} else {
			c := SmoothBursty{Rate: rate, MaxBurstSeconds: luaPick(r, smoothLuaBursts)}
			if i > 0 && r.Intn(2) == 0 {
				c = fam[0].(SmoothBursty)
				c.Rate = rate
			}
			fam[i] = c
		}
	}
	return fam
}

// smoothScale is the characteristic time of a config in µs: its interval, or its warm-up.
func smoothScale(a Scripted) int64 {
	var p smoothParams
	switch c := a.(type) {
	case SmoothBursty:
		p = c.config().params()
	case SmoothWarmingUp:
		p = c.config().params()
	}
	scale := p.interval
	if w, ok := a.(SmoothWarmingUp); ok && float64(w.Warmup/time.Microsecond) > scale {
		scale = float64(w.Warmup / time.Microsecond)
	}
	return int64(min(max(scale, 1), 1e12))
}

// smoothRequest asks for a few, many or an impossible number of permits, with a MaxWait
// of 0, some time (with a sub-µs remainder), Forever, negative or beyond MaxMicros.
func smoothRequest(r *rand.Rand, scale int64) Request {
	var req Request
	switch x := r.Intn(1000); {
	case x < 800:
		req.N = 1 + r.Int63n(3)
	case x < 950:
		req.N = 1 + r.Int63n(50)
	case x < 970:
		req.N = 1 + r.Int63n(1000)
	case x < 975:
		req.N = maxExact - r.Int63n(2) // exact in a double; the cost saturates
	default:
		req.N = maxExact + 1 + r.Int63n(3) // never granted: applies config changes only
	}
	req.MaxWait = randomMaxWait(r, scale, [4]int{40, 75, 90, 95})
	return req
}

// smoothTimeStep is a random move of the clock for the smooth twins (see clockStep).
func smoothTimeStep(r *rand.Rand, scale int64) int64 { return clockStep(r, scale, 20, 93) }

// smoothShape is how runTwinSeq drives the smooth twins: the clock moves by the scale of
// each step's config; refunds are rare and random, and one that leaves a state fresh
// deletes it.
var smoothShape = &seqShape{
	keys: 3, otherOdds: 5, stepScale: true, timeStep: smoothTimeStep, refundDeletes: true,
	start: func(r *rand.Rand, _ int64) int64 {
		now := 1_700_000_000_000_000 + r.Int63n(1e12)
		if r.Intn(4) == 0 {
			now = r.Int63n(1e7) // near the epoch: backward steps reach negative instants
		}
		return now
	},
	refund:  func(r *rand.Rand, _ bool) bool { return r.Intn(40) == 0 },
	request: func(r *rand.Rand, _, scale int64) Request { return smoothRequest(r, scale) },
}

// smoothTwin describes SmoothBursty (warm false) or SmoothWarmingUp to runTwinSeq.
func smoothTwin(warm bool) luaTwin {
	name := SmoothBursty{}.Name()
	if warm {
		name = SmoothWarmingUp{}.Name()
	}
	return luaTwin{
		name:   name,
		family: func(r *rand.Rand) []Scripted { return smoothFamily(r, warm) },
		// The Decisions' Limit (ceil(maxPermits)): charges (chargeRequest) cost 1 to 3
		// times it, so they cover small debts and, at the largest Limits, saturated ones.
		limit:  func(a Scripted) int64 { return a.(interface{ params() smoothParams }).params().limit() },
		scale:  smoothScale,
		snap:   func(st State) any { return snapSmooth(st) },
		stored: func(h map[string]string, _ []string) (any, error) { return parseSmooth(h, warm) },
		reset: func(a Scripted, st State, now int64) int64 {
			return st.(*smoothState).resetAfter(now, a.(interface{ params() smoothParams }).params())
		},
		shape: smoothShape,
	}
}

func TestSmoothLuaDifferential(t *testing.T) {
	t.Parallel()
	rdb := newRedisClient(t, startRedis(t), 3)
	const seqs, steps = 12, 900 // 10,800 steps per kind
	for _, warm := range []bool{false, true} {
		tw := smoothTwin(warm)
		t.Run(tw.name, func(t *testing.T) {
			t.Parallel()
			var st diffStats
			start := time.Now()
			for seq := 0; seq < seqs; seq++ {
				seed := int64(7000 + seq)
				if warm {
					seed += 100
				}
				runDifferential(t, rdb, tw, seed, steps, &st)
			}
			if st.steps < 10_000 || st.configChanges < 500 || st.reserved < 500 || st.denied < 500 || st.deletes == 0 && warm {
				t.Errorf("the sequences exercised too little: %+v", st)
			}
			t.Logf("%s: %d steps compared in %v: %+v", tw.name, st.steps, time.Since(start).Round(time.Millisecond), st)
		})
	}
}

// params lets the differential test reach the derived parameters of either kind.
func (c SmoothBursty) params() smoothParams    { return c.config().params() }
func (c SmoothWarmingUp) params() smoothParams { return c.config().params() }
