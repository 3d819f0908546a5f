package algo

import "slices"

// CloneState returns a deep copy of a state, so that tests in package algo_test can probe
// what a state would answer without changing it.
func CloneState(st State) State {
	switch s := st.(type) {
	case *fixedWindowState:
		c := *s
		return &c
	case *slidingLogState:
		c := *s
		c.entries = slices.Clone(s.entries)
		return &c
	case *slidingCounterState:
		c := *s
		return &c
	case *tokenBucketState:
		c := *s
		return &c
	case *leakyBucketState:
		c := *s
		return &c
	case *gcraState:
		c := *s
		return &c
	case *smoothState:
		c := *s
		return &c
	}
	return st
}
