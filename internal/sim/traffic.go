package sim

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Pattern names a traffic shape.
type Pattern string

// The traffic shapes. Each offers requests at a rate relative to a base rate (the
// algorithm's own rate, so every shape pushes the algorithm past its limit somewhere).
const (
	// Steady offers 1.5 × base, evenly spaced.
	Steady Pattern = "steady"
	// Burst offers 3 × base requests all at once at the start of every other second, and
	// nothing in between.
	Burst Pattern = "burst"
	// Spike offers 0.5 × base, with 5 × base during the middle tenth of the run.
	Spike Pattern = "spike"
	// Ramp grows linearly from 0 to 3 × base over the run.
	Ramp Pattern = "ramp"
)

// Patterns lists every pattern, for help texts.
var Patterns = []Pattern{Steady, Burst, Spike, Ramp}

// ParsePattern returns the pattern named s.
func ParsePattern(s string) (Pattern, error) {
	for _, p := range Patterns {
		if string(p) == s {
			return p, nil
		}
	}
	names := make([]string, len(Patterns))
	for i, p := range Patterns {
		names[i] = string(p)
	}
	return "", fmt.Errorf("unknown traffic %q (want one of %s)", s, strings.Join(names, ", "))
}

// Arrivals returns the offsets from the start at which requests arrive, sorted, for a run of
// length d at the given base rate (requests per second).
func (p Pattern) Arrivals(base float64, d time.Duration) []time.Duration {
	var out []time.Duration
	// evenly emits requests at a rate given as a function of the offset, by integrating it.
	evenly := func(rate func(t time.Duration) float64) {
		const step = time.Millisecond
		acc := 0.0
		for t := time.Duration(0); t < d; t += step {
			acc += rate(t) * step.Seconds()
			for ; acc >= 1; acc-- {
				out = append(out, t)
			}
		}
	}
	switch p {
	case Steady:
		evenly(func(time.Duration) float64 { return 1.5 * base })
	case Burst:
		n := int(math.Round(3 * base))
		for t := time.Duration(0); t < d; t += 2 * time.Second {
			for i := 0; i < n; i++ {
				out = append(out, t)
			}
		}
	case Spike:
		lo, hi := d*45/100, d*55/100
		evenly(func(t time.Duration) float64 {
			if t >= lo && t < hi {
				return 5 * base
			}
			return 0.5 * base
		})
	case Ramp:
		evenly(func(t time.Duration) float64 { return 3 * base * float64(t) / float64(d) })
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// mean returns the mean offered rate of p as a multiple of the base rate (Run uses it to
// refuse runs that would offer too many requests).
func (p Pattern) mean() float64 {
	if p == Spike {
		return 0.5*0.9 + 5*0.1
	}
	return 1.5 // steady; burst (3 × base every other second); ramp (0 to 3 × base)
}
