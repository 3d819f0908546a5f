// Package distributed is the Redis [store.Store]: limiter state shared by every process that
// talks to one Redis (a single server, a Sentinel failover group, or a Redis Cluster),
// through a go-redis v9 [redis.UniversalClient].
//
// # One round trip per decision
//
// Each algorithm of package algo has a Lua twin (algo.Scripted) with the same state fields
// and the same arithmetic as its Go transition. Apply and Refund run it with EVALSHA, so a
// decision is one round trip and is atomic on the server: concurrent callers in any number
// of processes can never admit more than the limit between them. When a server has lost the
// script (restart, failover, SCRIPT FLUSH, or a Cluster node that has never seen it) it
// answers NOSCRIPT, and the store sends the source with EVAL, which also caches it on that
// server; the caller sees nothing but one extra round trip.
//
// # Batching
//
// Under heavy concurrency a decision's cost is mostly its own round trip: a system call
// pair and go-redis's per-command work on the client, a read and a write on the server.
// [WithBatching] makes concurrent Apply and Refund calls share round trips: calls made
// while pipelines are in flight queue, and a few flusher goroutines send what is queued
// as one pipeline of EVALSHA commands (at most MaxBatch, with at most MaxInFlight
// pipelines in flight). There is no timer: a call made while the store is idle is sent at
// once from its own goroutine, so a lone caller sees one round trip, as without batching.
// Each script still runs on its own and atomically, so every call gets exactly the
// Decision it would get without batching. Commands that meet NOSCRIPT are re-sent, and
// only they. Failures stay per call: a failed pipeline fails each of its calls with
// store.ErrUnavailable, an error of one script fails only that call, and a caller whose
// context ends returns at once (its script may still run if it was already sent). ApplyAll
// with several rules and the semaphore operations are not batched. See docs/distributed.md
// for when it pays and measured figures.
//
// # Keys
//
// The state of a user key under an algorithm lives at
//
//	<prefix>{<escaped user key>}:<slot><suffix>
//
// where prefix is set by [WithPrefix] ("limiter:" by default), slot is the algorithm's Slot
// ("tb", "sl:1000000", ...) and suffix names the extra keys a script needs (a sliding log
// keeps a list beside its counter). The user key is escaped ('%' → "%25", '{' → "%7B",
// '}' → "%7D") so that the Cluster hash tag, the part between the braces, is exactly the
// user key: every key of one decision sits in one slot, as a script requires, and
// different user keys spread over the slots. Any user key is safe: empty is rejected, but
// braces, spaces, unicode, NUL bytes and long keys all map to distinct Redis keys.
//
// # Time and expiry
//
// By default the scripts read the server's TIME, so every client shares one clock and a
// client whose clock runs fast or slow cannot over-admit. [WithClientClock] makes the
// store send a client clock's time instead (tests, simulations). Every write sets the keys' PEXPIRE to the
// decision's ResetAfter (at least 1 ms), the moment the state equals a fresh one, and a
// state that is fresh again is deleted, so Redis memory is bounded by the active keys.
//
// # Failures
//
// Errors that kept a decision from being made (network, [WithTimeout], cluster down, a key
// holding other data, a reply that does not parse) wrap store.ErrUnavailable; the limiter
// facade's failure policy decides what a request gets then. Replication is asynchronous,
// so a failover can forget the last grants; [WithReplicaAck] makes a decision count only
// once replicas hold it. See docs/distributed.md for Cluster usage and what a failover can
// lose, with measured figures.
package distributed
