package store

import "github.com/ratekit/limiter/clockx"

// Clocked is optional: a store that reads "now" from a clockx.Clock reports it, so that
// what sleeps on top of the store (limiter's Wait, a smooth Limiter's Acquire, a
// semaphore's polls) sleeps on the same time the store decides on. Both stores of the
// module implement it. A store that does not is slept on with clockx.Real().
type Clocked interface {
	// Clock returns the clock the store decides on; never nil.
	Clock() clockx.Clock
}
