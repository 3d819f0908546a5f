// Package local is the in-memory [store.Store]: limiter state for one process.
//
// Keys are spread over shards by a hash of the key; each shard is a map guarded by its own
// mutex, so calls on different keys rarely contend and a call on an existing key allocates
// nothing. A key is idle once its state equals a fresh one again (a full bucket, an empty
// window: the moment the algorithm reports as ResetAfter); idle keys are removed by a
// bounded background sweep, so memory stays proportional to the keys in active use.
// [WithMaxKeys] caps the number of keys; when a shard is full only idle keys are evicted, and
// if none is found new keys share one overflow state per algorithm (or, for the smooth
// limiters, are denied), so that no key still limiting is ever forgotten.
//
// The store owns "now": it reads the clock given by [WithClock] (the real clock by default).
// Close stops the sweeper goroutine; a Store must be closed to release it.
package local
