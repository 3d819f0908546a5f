// Package store defines where limiter state lives: the [Store] interface that the in-memory
// store (package local) and the Redis store (package distributed) implement, and the errors
// they share. Package storetest holds the conformance and differential suites every Store
// must pass.
//
// A Store owns "now": it applies an algorithm's transition to one key at its own clock, in
// microseconds since the Unix epoch, atomically with respect to every other call on that key.
//
// [MultiApplier] is optional: a store that implements it applies several rules to one key
// in one atomic step, all or nothing, which limiter.All uses for rules sharing a store and
// a key. Both stores implement it.
//
// [SemaphoreStore] is the second, separate contract: hosting concurrency limits (holders
// with leases, fair or not) for package semaphore. Both stores implement both.
//
// [Admin] is optional too: a store that implements it answers Peek (what Apply would
// answer, consuming nothing) and Reset (forget a key's state), which limiter's Peek and
// Reset use; both stores implement it. Without it they report [ErrUnsupported].
//
// [Clocked] is optional too: a store that reports its clock lets the packages that sleep
// on top of it (limiter, smooth, semaphore) sleep on the time it decides on by default.
package store
