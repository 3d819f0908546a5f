package algo

// Peek is the Go twin of a script's "peek" (see [Script]): it returns what a.Apply(st,
// now, req) would answer, and leaves st as it was, by applying req to a copy of st
// ([CloneState]). ok is false, with a zero Decision, when st cannot be copied (a custom
// state without [StateCloner]); the states of this package's algorithms always can.
//
// Stores answer their Peek with it, so that a peek is exactly the decision the next
// Apply at the same instant makes, for every algorithm alike (a smooth limiter's resync
// and a window's roll-over happen on the copy only).
func Peek(a Algorithm, st State, now int64, req Request) (d Decision, ok bool) {
	c := CloneState(st)
	if c == nil {
		return Decision{}, false
	}
	return a.Apply(c, now, req), true
}
