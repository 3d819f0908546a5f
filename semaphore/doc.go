// Package semaphore limits how many holders work at once under a name ("at most 5
// concurrent exports", "at most 100 in-flight calls to the payment provider across the
// fleet"). Where a rate limiter bounds how often, a semaphore bounds how many at a time.
//
// The state lives in a store.SemaphoreStore: in memory (package local) for one process, or
// in Redis (package distributed) for every process sharing it:
//
//	st, err := local.New()
//	...
//	sem, err := semaphore.New(st, algo.Semaphore{Permits: 5, LeaseTTL: 10 * time.Second})
//	lease, err := sem.Acquire(ctx, "exports")
//	defer lease.Release(ctx)
//
// # Leases
//
// A holder gets a [Lease], valid for LeaseTTL unless renewed ([Lease.Renew],
// [Lease.KeepAlive]) and ended by [Lease.Release]. A holder that crashes frees its permit
// when its lease expires, without any other process noticing. Each lease carries an owner
// token of 128 random bits: only its owner can renew or release it. [Lease.Deadline] says
// until when the lease is certainly held; work that must not overlap should stop by then.
//
// # Blocking without hammering the store
//
// [Semaphore.Acquire] polls: it tries, and while denied sleeps on the semaphore's clock
// before trying again, 1 ms at first, doubling up to a cap ([DefaultPoll], see [WithPoll]),
// and never past the moment the earliest lease expires, when a permit is sure to come free
// unless renewed. A blocked waiter therefore costs the store at most one call per cap
// interval. A release is noticed at the waiters' next poll, so a freed permit may stay
// idle for up to the cap; that latency is the price of the design. Notification by
// pub/sub was not chosen because it cannot replace polling: a crashed holder publishes
// nothing (only expiry frees its permit), and a message can be lost while a subscriber
// reconnects, so waiters would poll anyway; one mechanism is simpler to get right.
//
// In fair mode (algo.Semaphore.Fair) a waiter keeps its place in the store's queue between
// polls, for at least 2 s or ten times the cap; a waiter that disappears without giving up
// (a crashed process) holds up the waiters behind it for that long. A waiter whose
// context ends gives up its place at once.
//
// # Clocks
//
// Two clocks are at work. The store's decides when leases expire (local.WithClock, or the
// Redis server's TIME unless distributed.WithClientClock). The semaphore's clock is the one
// it sleeps on, between polls and between renewals, and reads Deadline on: by default the
// store's own clock when the store reports one (store.Clocked), else real time;
// [WithClock] sets another.
package semaphore
