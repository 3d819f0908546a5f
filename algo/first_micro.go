package algo

// firstMicro returns the least d ≥ lo (µs) at which ok(d) holds, given d, an estimate of
// it: the real quotient rounded up to whole µs. ok must be monotone (false, then true) and
// computed with the very float64 operations of the transition it asks about, so that a
// wait, RetryAfter or ResetAfter it corrects names the first instant at which the
// transition really answers so: float64 rounding can put the quotient a µs off either way
// (a retry at RetryAfter denied again, or granted a µs before it). It moves at most
// firstMicroSteps µs each way (the rounding costs one; more only where float64 no longer
// resolves a µs of refill, near 2^53 permits); estimates of MaxMicros or more are kept.
// Its Lua twin is first_micro, in the prelude of every algorithm script (prelude.lua).
func firstMicro(d, lo int64, ok func(d int64) bool) int64 {
	if d >= MaxMicros {
		return d
	}
	for i := 0; i < firstMicroSteps && d > lo && ok(d-1); i++ {
		d--
	}
	for i := 0; i < firstMicroSteps && d < MaxMicros && !ok(d); i++ {
		d++
	}
	return d
}

// firstMicroSteps bounds firstMicro's correction.
const firstMicroSteps = 4
