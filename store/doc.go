// Package store defines where limiter state lives: the [Store] interface that the in-memory
// store (package local) and the Redis store (package distributed) implement, and the errors
// they share ([ErrInvalidKey], [ErrClosed], [ErrUnavailable]).
//
// A Store owns "now": it applies an algorithm's transition to one key at its own clock, in
// microseconds since the Unix epoch, atomically with respect to every other call on that key.
// Optional interfaces add to it: [MultiApplier] applies several rules to one key all or
// nothing (limiter.All uses it), and [Clocked] reports the store's clock, so the packages
// that sleep on top of it (limiter, smooth, semaphore) sleep on the time it decides on.
// [SemaphoreStore] is a separate contract: hosting the concurrency limits of package
// semaphore. Both stores of the module implement all four.
//
// [Admin] is optional too: a store that implements it answers Peek (what Apply would
// answer, consuming nothing) and Reset (forget a key's state), which limiter's Peek and
// Reset use; both stores implement it. Without it they report [ErrUnsupported].
//
// Package storetest holds the conformance and differential suites every Store must pass.
package store
