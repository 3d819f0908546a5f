package adaptive

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at returns a sample of a request admitted ms milliseconds after t0 that took lat ms.
func at(ms, lat int, inFlight int, dropped bool) sample {
	return sample{Start: t0.Add(time.Duration(ms) * time.Millisecond), Latency: time.Duration(lat) * time.Millisecond,
		InFlight: inFlight, Dropped: dropped}
}

// step is one row of an estimator table: a sample and the limit it must give.
type step struct {
	s    sample
	want int
}

func runSteps(t *testing.T, a Algorithm, steps []step) {
	t.Helper()
	if err := a.validate(); err != nil {
		t.Fatal(err)
	}
	e := a.newEstimator()
	for i, st := range steps {
		if got := e.Update(st.s); got != st.want {
			t.Fatalf("step %d (%+v): limit %d, want %d", i, st.s, got, st.want)
		}
		if got := e.Limit(); got != st.want {
			t.Fatalf("step %d: Limit() = %d after Update returned %d", i, got, st.want)
		}
	}
}

func TestAIMDTable(t *testing.T) {
	t.Parallel()
	a := AIMD{Initial: 4, Min: 2, Max: 8, Timeout: 100 * time.Millisecond}
	runSteps(t, a, []step{
		{at(0, 10, 1, false), 4},    // 2×1 < 4: the traffic is the limit, no growth
		{at(0, 10, 2, false), 5},    // slow start: +1 per success
		{at(1, 10, 3, false), 6},    //
		{at(2, 10, 6, true), 5},     // drop: ⌊6 × 0.9⌋, slow start over, ignore what started before 12 ms
		{at(3, 10, 6, true), 5},     // admitted before the backoff ended: already counted
		{at(11, 10, 5, false), 5},   // so is its success
		{at(12, 10, 5, false), 5},   // after: +1/limit per success: 5.2
		{at(12, 10, 5, false), 5},   // 5.39
		{at(12, 10, 5, false), 5},   // 5.58
		{at(12, 10, 5, false), 5},   // 5.76
		{at(12, 10, 5, false), 5},   // 5.93
		{at(12, 10, 5, false), 6},   // 6.10: about one limit's worth of successes gives +1
		{at(13, 101, 6, false), 5},  // slower than Timeout: a drop, ⌊6 × 0.9⌋
		{at(200, 10, 1, true), 4},   // ⌊5 × 0.9⌋
		{at(300, 10, 1, true), 3},   // ⌊4 × 0.9⌋
		{at(400, 10, 1, true), 2},   // ⌊3 × 0.9⌋
		{at(500, 10, 1, true), 2},   // Min
		{at(600, 100, 2, false), 2}, // exactly Timeout is not a drop: 2.5
		{at(600, 10, 2, false), 2},  // 2.9
		{at(600, 10, 2, false), 3},  // 3.24
	})
	// Max bounds the slow start.
	steps := []step{}
	for i := range 10 {
		steps = append(steps, step{at(i, 1, 8, false), min(5+i, 8)})
	}
	runSteps(t, a, steps)
}

func TestAIMDDefaults(t *testing.T) {
	t.Parallel()
	e := AIMD{}.newEstimator()
	if got := e.Limit(); got != defaultInitial {
		t.Fatalf("initial limit %d, want %d", got, defaultInitial)
	}
	if got := e.Update(at(0, 1, 20, true)); got != 18 {
		t.Fatalf("after a drop %d, want 18 (×0.9)", got)
	}
	if got, want := (AIMD{}).String(), "aimd(limit 20 in [1, 1000], +1 per round trip, ×0.9 on drop)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestGradientTable(t *testing.T) {
	t.Parallel()
	g := Gradient{Initial: 16, Min: 4, Max: 40, Tolerance: 1.5, Smoothing: 0.5}
	runSteps(t, g, []step{
		// Round 1 ends with its first sample: long = short = 100 ms, g = 1.5: full growth +√16.
		{at(0, 100, 16, false), 20},
		// Admitted before the round ended at 100 ms: accumulated.
		{at(50, 100, 20, false), 20},
		// Ends round 2: mean 100, g = 1.5, +√20 = 24.47.
		{at(100, 100, 20, false), 24},
		// Round 3 (started ≥ 200 ms): mean 125 ms, g = 1.5×100/125 = 1.2: 40% room: +0.4×√24.47.
		{at(200, 125, 24, false), 26},
		// Round 4: mean 200 ms, g = 0.75 < 1: ×(1 − 0.5 × 0.25) = 0.875: 26.45 → 23.14.
		{at(400, 200, 26, false), 23},
		// Round 5: mean 1 s, g = 0.15 → floored at 0.5: ×0.75 = 17.36.
		{at(700, 1000, 23, false), 17},
		// Round 6: quick but dropped: g capped at 0.9: ×0.95 = 16.49.
		{at(1800, 50, 17, true), 16},
		// Round 7: the long latency followed the 50 ms down: g = 1.5, but only 4 in flight
		// (2×4 < 16): the traffic is the limit, no growth.
		{at(1900, 50, 4, false), 16},
	})
	// Bounds: growth stops at Max, shrinking at Min.
	e := g.newEstimator()
	for i := range 20 {
		e.Update(at(i*100, 100, 40, false))
	}
	if got := e.Limit(); got != 40 {
		t.Fatalf("after 20 rounds without queueing: %d, want Max 40", got)
	}
	for i := range 20 {
		e.Update(at(2000+i*10000, 10000, 40, false))
	}
	if got := e.Limit(); got != 4 {
		t.Fatalf("after 20 slow rounds: %d, want Min 4", got)
	}
}

func TestGradientLongLatencyAges(t *testing.T) {
	t.Parallel()
	// A service 3× slower at a constant number in flight (so no evidence either way, see
	// TestGradientSlowerServiceFollowed) is judged right again after a few LongWindows: the
	// long-term latency rises to the new normal.
	g := Gradient{Initial: 50, LongWindow: time.Second}
	e := g.newEstimator()
	ms := 0
	for range 10 {
		e.Update(at(ms, 100, 50, false))
		ms += 100
	}
	low := 0
	for range 200 { // 60 s of 300 ms rounds
		low = e.Update(at(ms, 300, 1000, false))
		ms += 300
	}
	if low < 50 {
		t.Fatalf("limit %d after 60 s at the new latency, want back at ≥ 50", low)
	}
}

// TestGradientSlowerServiceFollowed: the service becomes 3× slower for good while the
// requests in flight follow the limit (as they do under overload); the latency does not
// fall as the limit does, which is no queueing, so the floor moves to the new latency
// within a few rounds and the limit grows back, without waiting for LongWindow (10 min).
func TestGradientSlowerServiceFollowed(t *testing.T) {
	t.Parallel()
	e := Gradient{Initial: 50}.newEstimator()
	ms := 0
	for range 10 {
		e.Update(at(ms, 100, e.Limit(), false))
		ms += 100
	}
	lowest, last := e.Limit(), 0
	for range 100 { // 30 s of 300 ms rounds
		last = e.Update(at(ms, 300, e.Limit(), false))
		lowest = min(lowest, last)
		ms += 300
	}
	if lowest < 20 || last < 50 {
		t.Fatalf("limit fell to %d and ended at %d, want ≥ 20 and back at ≥ 50", lowest, last)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	bad := map[string]Algorithm{
		"aimd min above max":       AIMD{Min: 10, Max: 5},
		"aimd initial below min":   AIMD{Initial: 2, Min: 3},
		"aimd negative":            AIMD{Max: -1},
		"aimd backoff 1":           AIMD{Backoff: 1},
		"aimd increase negative":   AIMD{Increase: -1},
		"aimd timeout negative":    AIMD{Timeout: -time.Second},
		"gradient tolerance 0.5":   Gradient{Tolerance: 0.5},
		"gradient smoothing 2":     Gradient{Smoothing: 2},
		"gradient window negative": Gradient{LongWindow: -1},
		"gradient initial above":   Gradient{Initial: 2000},
		"fixed 0":                  Fixed{},
	}
	for name, a := range bad {
		if err := a.validate(); !errors.Is(err, algo.ErrInvalidConfig) {
			t.Errorf("%s: Validate() = %v, want algo.ErrInvalidConfig", name, err)
		}
		if _, err := New(a); !errors.Is(err, algo.ErrInvalidConfig) {
			t.Errorf("%s: New = %v, want algo.ErrInvalidConfig", name, err)
		}
	}
	// Min above the default Max raises Max; Initial follows Min.
	if got := (AIMD{Min: 2000}).newEstimator().Limit(); got != 2000 {
		t.Errorf("AIMD{Min: 2000} starts at %d, want 2000", got)
	}
}

// Property: whatever the samples, every limit stays within [Min, Max].
func TestLimitStaysWithinBounds(t *testing.T) {
	t.Parallel()
	algos := []Algorithm{
		AIMD{Min: 3, Max: 50}, AIMD{Min: 1, Max: 2, Timeout: time.Millisecond},
		Gradient{Min: 3, Max: 50}, Gradient{Min: 5, Max: 6, Tolerance: 1, Smoothing: 1},
		Gradient{}, AIMD{},
	}
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 15))
		for _, a := range algos {
			var lo, hi int
			switch c := a.(type) {
			case AIMD:
				b, _ := resolveBounds("", c.Initial, c.Min, c.Max)
				lo, hi = b.min, b.max
			case Gradient:
				b, _ := resolveBounds("", c.Initial, c.Min, c.Max)
				lo, hi = b.min, b.max
			}
			e := a.newEstimator()
			now := t0
			for i := range 2000 {
				now = now.Add(time.Duration(rng.IntN(50)) * time.Millisecond)
				s := sample{Start: now.Add(-time.Duration(rng.IntN(100)) * time.Millisecond),
					Latency:  time.Duration(rng.ExpFloat64() * float64(20*time.Millisecond)),
					InFlight: rng.IntN(2 * hi), Dropped: rng.IntN(20) == 0}
				if rng.IntN(50) == 0 {
					s.Latency = 0 // and clocks that did not move
				}
				if got := e.Update(s); got < lo || got > hi {
					t.Fatalf("%v, seed %d, sample %d: limit %d outside [%d, %d]", a, seed, i, got, lo, hi)
				}
			}
		}
	}
}
