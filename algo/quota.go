package algo

import (
	"math"
	"time"
)

// Quota is what an algorithm grants a fresh key, in the terms of the RateLimit-Policy
// header: Limit permits at once (the Limit of every Decision it makes), earned back over
// Window. For the window algorithms it is Limit per Window; for TokenBucket, GCRA and
// LeakyBucket it is Burst (or Capacity) per Burst/Rate seconds, the time their rate takes to
// refill (or drain) it; for SmoothBursty it is the permits saved up over MaxBurstSeconds.
//
// A span in seconds is rounded up to the nanosecond. Window is 0 when the algorithm has no
// such span (SmoothWarmingUp: how fast a key earns permits depends on how warm it is), and
// [Never] when the span is longer than a Duration holds (about 292 years).
type Quota struct {
	Limit  int64
	Window time.Duration
}

// Quoter is implemented by a custom algorithm that states its [Quota]. Code that describes
// a rule (httplimit's RateLimit-Policy header, the conformance suite) asks [QuotaOf] rather
// than knowing each algorithm, so a custom Algorithm implements Quoter to be described as
// this package's config structs are (they state theirs through an unexported method that
// QuotaOf reads alike).
type Quoter interface {
	// Quota returns the algorithm's quota; it does not depend on any key's state.
	Quota() Quota
}

// QuotaOf returns a's Quota, looking through wrappers such as [Named] (any algorithm with
// an Unwrap() Algorithm method) until it finds one that states it (a [Quoter], or one of
// this package's algorithms). ok is false when there is none.
func QuotaOf(a Algorithm) (q Quota, ok bool) {
	for a != nil {
		switch qa := a.(type) {
		case quoter:
			return qa.quota(), true
		case Quoter:
			return qa.Quota(), true
		}
		a = unwrapAlgorithm(a)
	}
	return Quota{}, false
}

// quoter is Quoter for this package's algorithms, read through QuotaOf.
type quoter interface{ quota() Quota }

// spanOf converts a span in seconds to a Duration rounded up to the nanosecond, so that
// whole seconds rounded up from it are those of the span; Never beyond the largest Duration.
func spanOf(seconds float64) time.Duration {
	ns := math.Ceil(seconds * 1e9)
	switch {
	case !(ns > 0): // also NaN, which no valid config produces
		return 0
	case ns >= math.MaxInt64: // 2^63 as a float64
		return Never
	}
	return time.Duration(ns)
}
