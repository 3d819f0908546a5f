// Package redistest starts throw-away Redis servers for tests: a single node ([Start]) or a
// small Redis Cluster ([StartCluster]), each on free loopback ports with its own temporary
// directory, no persistence, and a t.Cleanup that kills it.
//
// Tests never touch a Redis they did not start: every server is a fresh redis-server
// process, and the helpers check (through INFO's process_id) that the server answering on
// the chosen port is the process they started, so a port race with another process fails
// loudly instead of running against foreign data.
//
// When redis-server is not on PATH, [Require] (called by every helper) skips the test with
// a loud message, or fails it when the environment variable LIMITER_REQUIRE_REDIS is set,
// which CI sets so that a missing server cannot silently turn the Redis tests into skips.
//
// Readiness is established by polling (PING, CLUSTER INFO) in bounded loops, never by
// fixed sleeps.
package redistest
