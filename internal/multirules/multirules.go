// Package multirules holds the composites (rule sets for store.MultiApplier.ApplyAll)
// that the module's tests drive against its stores: store/storetest's Multi part against
// a model, and package distributed's tests against the local store and byte for byte on
// Redis. Written once, every store and every check sees the same sets.
package multirules

import (
	"fmt"
	"strconv"
	"time"

	"github.com/ratekit/limiter/algo"
)

// Sets returns the composites, at the millisecond scale of the tests' timelines: windows
// at two levels, the two token buckets of "1000/s AND 1500/s with a burst of 4" (the
// second named, both having the slot "tb"), mixes of every algorithm, Penalty (which
// records no offence in a composite), the smooth algorithms beside a sliding counter, and
// rules under the namespace limiter.All gives a rule whose slot an earlier rule has
// (":<i>:<slot>").
func Sets() map[string][]algo.Algorithm {
	return map[string][]algo.Algorithm{
		"windows": {
			algo.FixedWindow{Limit: 10, Window: 10 * time.Millisecond},
			algo.FixedWindow{Limit: 3, Window: time.Millisecond},
		},
		"buckets": {
			algo.TokenBucket{Rate: 1000, Burst: 20},
			algo.Named(algo.TokenBucket{Rate: 1500, Burst: 4}, "short"),
		},
		"mixed": {
			algo.SlidingWindowLog{Limit: 5, Window: 7 * time.Millisecond},
			algo.GCRA{Rate: 1e3 / 3, Burst: 5},
			algo.LeakyBucket{Rate: 333.3, Capacity: 4},
			algo.Named(algo.SlidingWindowLog{Limit: 9, Window: 20 * time.Millisecond}, "long"),
		},
		"every algorithm": {
			algo.FixedWindow{Limit: 9, Window: 5 * time.Millisecond},
			algo.SlidingWindowLog{Limit: 8, Window: 6 * time.Millisecond},
			algo.SlidingWindowCounter{Limit: 7, Window: 4 * time.Millisecond},
			algo.TokenBucket{Rate: 2500, Burst: 6},
			algo.LeakyBucket{Rate: 2000, Capacity: 5},
			algo.GCRA{Rate: 3000, Burst: 7},
			algo.SmoothBursty{Rate: 2800, MaxBurstSeconds: 0.002},
			algo.SmoothWarmingUp{Rate: 3500, Warmup: 2 * time.Millisecond},
			algo.Penalty{Rule: algo.FixedWindow{Limit: 8, Window: 3 * time.Millisecond}, Block: time.Millisecond},
		},
		"smooth": {
			algo.SlidingWindowCounter{Limit: 9, Window: 11 * time.Millisecond},
			algo.SmoothBursty{Rate: 700, MaxBurstSeconds: 0.01},
			algo.SmoothWarmingUp{Rate: 900, Warmup: 5 * time.Millisecond},
		},
		"namespaced": {
			algo.FixedWindow{Limit: 6, Window: 5 * time.Millisecond},
			InNamespace(2, algo.FixedWindow{Limit: 4, Window: 5 * time.Millisecond}),
			algo.TokenBucket{Rate: 1500, Burst: 5},
			InNamespace(4, algo.TokenBucket{Rate: 1000, Burst: 3}),
		},
	}
}

// InNamespace returns a under the slot ":<i>:<slot>", as limiter.All applies the i-th
// rule of a composite when an earlier rule has its slot. A scripted a stays scripted.
func InNamespace(i int, a algo.Algorithm) algo.Algorithm {
	slot := ":" + strconv.Itoa(i) + ":" + a.Slot()
	if s, ok := a.(algo.Scripted); ok {
		return spacedScripted{s, slot}
	}
	return spaced{a, slot}
}

// spaced is an algorithm under another slot.
type spaced struct {
	algo.Algorithm
	slot string
}

func (s spaced) Slot() string           { return s.slot }
func (s spaced) Unwrap() algo.Algorithm { return s.Algorithm }
func (s spaced) String() string         { return s.slot + "=" + fmt.Sprint(s.Algorithm) }

// spacedScripted is a scripted algorithm under another slot.
type spacedScripted struct {
	algo.Scripted
	slot string
}

func (s spacedScripted) Slot() string           { return s.slot }
func (s spacedScripted) Unwrap() algo.Algorithm { return s.Scripted }
func (s spacedScripted) String() string         { return s.slot + "=" + fmt.Sprint(s.Scripted) }
