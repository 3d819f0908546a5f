package chart

import (
	"math"
	"strconv"
)

// scale maps one axis of data onto pixels: [lo, hi] onto [from, from+size], ticks every
// step from lo.
type scale struct {
	lo, hi, step float64
	from, size   float64
	flip         bool // y: lo at the bottom
}

// newScale returns the scale of the data range [min, max] cut into at most about ticks
// steps of 1, 2 or 5 × 10^k. The range always holds 0 and starts at a whole step; round
// ends it at a whole step too (at least one step above its start), else at max (a time
// axis ends where the data does).
func newScale(min, max float64, ticks int, round bool) scale {
	lo, hi := math.Min(0, min), math.Max(0, max)
	step := niceStep(hi-lo, ticks)
	s := scale{step: step, hi: hi}
	if lo < 0 {
		s.lo = math.Floor(lo/step) * step
	}
	if round {
		s.hi = math.Max(s.lo+step, math.Ceil(hi/step)*step)
	}
	return s
}

// at returns s placed on the pixels [from, from+size].
func (s scale) at(from, size float64, flip bool) scale {
	s.from, s.size, s.flip = from, size, flip
	return s
}

// px returns the pixel of the value v.
func (s scale) px(v float64) float64 {
	if s.flip {
		return s.from + s.size - (v-s.lo)/(s.hi-s.lo)*s.size
	}
	return s.from + (v-s.lo)/(s.hi-s.lo)*s.size
}

// ticks calls f with every tick value from lo (or from the first after lo if !withLo) to
// hi. The values are summed step by step; tickLabel hides the float noise that leaves.
func (s scale) ticks(withLo bool, f func(v float64)) {
	v := s.lo
	if !withLo {
		v += s.step
	}
	for ; v <= s.hi+s.step/1e6; v += s.step {
		f(v)
	}
}

// niceStep returns the smallest of 1, 2, 5 × 10^k that cuts [0, span] into at most ticks
// steps (1 for an empty span).
func niceStep(span float64, ticks int) float64 {
	if !(span > 0) {
		return 1
	}
	raw := span / float64(ticks)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw*(1-1e-9) {
			return m * mag
		}
	}
	return 10 * mag
}

// tickLabel prints a tick value with as many decimals as the step has, so that the float
// noise summing steps accumulates never shows.
func tickLabel(v, step float64) string {
	decimals := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	return strconv.FormatFloat(math.Round(v/step)*step, 'f', decimals, 64)
}
