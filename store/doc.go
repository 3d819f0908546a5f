// Package store defines where limiter state lives: the [Store] interface and the errors
// its implementations share ([ErrInvalidKey], [ErrClosed], [ErrUnavailable],
// [ErrKeyUnavailable]). The module has three stores: the in-memory store (package local),
// the Redis store (package distributed), and package leasing, which wraps either and serves
// hot keys from slices of permits taken ahead.
//
// A Store owns "now": it applies an algorithm's transition to one key at its own clock, in
// microseconds since the Unix epoch, atomically with respect to every other call on that key.
// Optional interfaces add to it: [MultiApplier] applies several rules to one key all or
// nothing (limiter.All uses it), and [Clocked] reports the store's clock, so the packages
// that sleep on top of it (limiter, smooth, semaphore) sleep on the time it decides on.
// [SemaphoreStore] is a separate contract: hosting the concurrency limits of package
// semaphore. The local and Redis stores implement all four; leasing implements Clocked.
//
// [Admin] is optional too: a store that implements it answers Peek (what Apply would
// answer, consuming nothing) and Reset (forget a key's state), which limiter's Peek and
// Reset use; all three stores implement it. Without it they report [ErrUnsupported].
//
// Package storetest holds the conformance and differential suites every Store must pass.
package store
