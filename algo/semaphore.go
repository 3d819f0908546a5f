package algo

import (
	_ "embed" // semaphore.lua, the twin of the local store's semaphore state
	"fmt"
	"time"
)

// Semaphore is the configuration of a counting semaphore with leases: at most Permits
// holders at once, each holding its permit for LeaseTTL unless it renews or releases it
// first. It is not an [Algorithm] (it has no rate); stores that implement
// store.SemaphoreStore host it, and semaphore.New validates it.
//
// A holder that crashes keeps its permit only until its lease expires, LeaseTTL after it
// was granted or last renewed: no process has to notice the crash. Fair selects how free
// permits are handed out when several acquirers wait: false grants whoever asks first once
// a permit is free (cheapest, no queue, a waiter may starve under contention); true queues
// the waiters in arrival order, by a ticket taken from a counter on the store (never by
// client clocks), and grants in ticket order.
type Semaphore struct {
	// Permits is how many holders the semaphore admits at once, in [1, 2^53].
	Permits int64
	// LeaseTTL is how long a grant or a renewal keeps the permit: at least 1 ms (the
	// resolution of Redis key expiry), a whole number of microseconds, at most MaxMicros µs.
	LeaseTTL time.Duration
	// Fair grants in arrival order when true; see the type's documentation.
	Fair bool
}

// Validate reports, wrapping ErrInvalidConfig, which field makes the config unusable.
func (c Semaphore) Validate() error {
	if err := checkCount("Semaphore.Permits", c.Permits); err != nil {
		return err
	}
	if c.LeaseTTL < time.Millisecond {
		return fmt.Errorf("%w: Semaphore.LeaseTTL must be at least 1ms, got %v", ErrInvalidConfig, c.LeaseTTL)
	}
	if c.LeaseTTL%time.Microsecond != 0 {
		return fmt.Errorf("%w: Semaphore.LeaseTTL must be a whole number of microseconds, got %v",
			ErrInvalidConfig, c.LeaseTTL)
	}
	if c.LeaseTTL/time.Microsecond > time.Duration(MaxMicros) {
		return fmt.Errorf("%w: Semaphore.LeaseTTL must be at most %d µs, got %v", ErrInvalidConfig, MaxMicros, c.LeaseTTL)
	}
	return nil
}

// SemaphoreResult is the answer to one acquire attempt.
//
// Holders is the number of live holders after the attempt (the acquirer included when
// Acquired). Position is, for a fair semaphore that did not grant, the number of waiters
// queued ahead of the acquirer (0: it is next in line); it is 0 otherwise. RetryAfter is,
// when not Acquired, the time until the earliest live lease expires, the latest moment a
// permit can come free without a Release or a Renew (0 when no lease is held: a fair
// acquirer then waits for the waiters ahead of it); it is 0 when Acquired.
type SemaphoreResult struct {
	Acquired   bool
	Holders    int64
	Position   int64
	RetryAfter time.Duration
}

// semaphoreLua is the Lua twin of the Go semaphore state the local store runs.
//
//go:embed semaphore.lua
var semaphoreLua string

var semaphoreScript = newBaseScript("semaphore", semaphoreLua, ":q", ":qe", ":n")

// Script returns the semaphore script run by the Redis store (the local store runs its Go
// twin). It keeps four keys, the base key followed by each of Keys ("<base>",
// "<base>:q", "<base>:qe", "<base>:n"), all of which must share one Cluster hash tag:
//
//	KEYS[1]  sorted set: holder token → lease expiry (µs)
//	KEYS[2]  sorted set: waiter token → ticket (fair queue)
//	KEYS[3]  sorted set: waiter token → queue place expiry (µs)
//	KEYS[4]  string: the last ticket handed out (INCR)
//	ARGV[1]  "acquire", "release", "renew" or "holders"
//	ARGV[2]  now in µs since the Unix epoch, or "" to read the server's TIME, or "now pad"
//	         (every TTL set gets pad µs more)
//	ARGV[3]  the owner token ("" for holders)
//	ARGV[4]  acquire: the queue TTL in µs (0: do not queue)
//	ARGV[5..] the config, as appended by AppendArgs: Permits, LeaseTTL in µs, Fair (0/1)
//
// "acquire" replies {acquired (0/1), holders, position, retry_after_us}; "release" and
// "renew" reply 1 when the token held a live lease, else 0; "holders" replies the count.
// Every write sets each written key's PEXPIRE to its latest expiry (at least 2 ms), and
// an empty queue deletes its three keys.
func (Semaphore) Script() *Script { return semaphoreScript }

// AppendArgs appends Permits, LeaseTTL in µs and Fair (1 or 0), the config arguments the
// script reads from ARGV[5] on.
func (c Semaphore) AppendArgs(args []any) []any {
	fair := 0
	if c.Fair {
		fair = 1
	}
	return append(args, c.Permits, micros(c.LeaseTTL), fair)
}
