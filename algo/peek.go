package algo

import "math"

// Peek is the Go twin of a script's "peek" (see [Script]): it returns what a.Apply(st,
// now, req) would answer, except for Remaining, and leaves st as it was, by applying req
// to a copy of st ([StateCloner]). A nil st stands for a fresh state (a.NewState()). ok is
// false, with a zero Decision, when st cannot be copied (a custom state without
// [StateCloner]); the states of this package's algorithms always can.
//
// Remaining is what is available now, before the request, where Apply's is what is left
// after it: a fresh TokenBucket{Rate: 1, Burst: 10} peeks Remaining 10, the floor of
// golang.org/x/time/rate's Tokens, and Allowed still says whether req would be granted. It
// is the Remaining a request the algorithm can never grant is answered with, so it does not
// depend on req. (The smooth limiters grant a request whatever its size once the previous
// one is paid for: they may peek Allowed with Remaining 0, their stored permits.)
//
// Stores answer their Peek with it, so that a peek is exactly the decision the next
// Apply at the same instant makes, for every algorithm alike (a smooth limiter's resync
// and a window's roll-over happen on the copy only).
func Peek(a Algorithm, st State, now int64, req Request) (d Decision, ok bool) {
	c, p := peekCopy(a, st), peekCopy(a, st)
	if c == nil || p == nil {
		return Decision{}, false
	}
	d = a.Apply(c, now, req)
	// The script's peek mode asks the same: see twin in prelude.lua.
	if probe := a.Apply(p, now, Request{N: math.MaxInt64}); !probe.Allowed {
		d.Remaining = probe.Remaining
	}
	return d, true
}

// peekCopy is a copy of st to apply a peek to: a fresh state for nil; nil when st cannot
// be copied.
func peekCopy(a Algorithm, st State) State {
	if st == nil {
		return a.NewState()
	}
	return cloneState(st)
}
