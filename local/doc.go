// Package local is the in-memory [store.Store]: limiter state for one process.
//
// [New] returns a [Store], safe for concurrent use. It also implements
// [store.MultiApplier], [store.SemaphoreStore] and [store.Clocked]. Keys are spread over
// shards, each a hash table whose changes a mutex guards; a call on an existing key finds
// it without that lock and decides under the key's own, so calls on distinct keys share
// no written memory, and it allocates nothing. A key whose state equals a fresh one again
// (the algorithm's ResetAfter) is idle, and a background sweep removes idle keys, so
// memory stays proportional to the keys in use; [WithMaxKeys] caps the count without ever
// forgetting a key that still limits.
//
// The store owns "now": it reads the clock given by [WithClock] (the real clock by default).
// Close stops the sweeper goroutine; a Store must be closed to release it.
//
// docs/local.md explains sharding, idle keys and the overflow rules of WithMaxKeys.
package local
