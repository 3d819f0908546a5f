// Package distributed is the Redis [store.Store]: limiter state shared by every process that
// talks to one Redis (a single server, a Sentinel failover group, or a Redis Cluster),
// through a go-redis v9 [redis.UniversalClient].
//
// [New] wraps a client (the package examples show a single server and a Cluster); a [Store]
// is safe for concurrent use by any number of goroutines and processes. Each decision runs
// the algorithm's Lua twin (algo.Scripted) in one round trip, atomic on the server: as a
// Redis 7 function (FCALL) where the server has them, else with EVALSHA, loaded again
// transparently when the server lost it. Every key of one decision carries the user
// key as its Cluster hash tag, under a prefix ([WithPrefix], "limiter:" by default), so any
// user key is safe and each script touches one slot. The scripts read the server's TIME
// unless [WithClientClock] sends a client clock's time; every write sets the keys' PEXPIRE
// to the moment the state equals a fresh one, so Redis memory is bounded by the active
// keys. The Store also hosts semaphores (store.SemaphoreStore) and applies several rules at
// once (store.MultiApplier).
//
// Errors that kept a decision from being made (network, [WithTimeout], cluster down, a key
// holding other data, a reply that does not parse) wrap store.ErrUnavailable; the limiter's
// failure policy decides what a request gets then. Those of one key or script (a key
// holding other data, a script error, a reply that does not parse) wrap
// store.ErrKeyUnavailable as well: Redis answered, so the limiter's circuit breaker does not
// count them. A deadline that passed while go-redis kept failing to connect names the
// dial's error (New adds a dial hook to the client for that). Concurrent calls share round
// trips by default ([WithBatching] tunes or turns it off); [WithReplicaAck] makes a decision count only once replicas hold it.
//
// docs/distributed.md explains the keys, expiry, time, Cluster, what a failover can lose,
// the failure modes, batching, and measured figures.
package distributed
