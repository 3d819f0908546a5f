// Package semaphore limits how many holders work at once under a name ("at most 5
// concurrent exports", "at most 100 in-flight calls to the payment provider across the
// fleet"). Where a rate limiter bounds how often, a semaphore bounds how many at a time.
//
// The state lives in a store.SemaphoreStore: in memory (package local) for one process, or
// in Redis (package distributed) for every process sharing it:
//
//	sem, err := semaphore.New(local.New(), algo.Semaphore{Permits: 5, LeaseTTL: 10 * time.Second})
//	lease, err := sem.Acquire(ctx, "exports")
//	defer lease.Release(ctx)
//
// A holder gets a [Lease], valid for LeaseTTL unless renewed ([Lease.Renew],
// [Lease.KeepAlive]) and ended by [Lease.Release]; a crashed holder's permit comes free when
// its lease expires. [Lease.Deadline] says until when the lease is certainly held: work that
// must not overlap should stop by then. [Semaphore.Acquire] blocks by polling with backoff
// up to a cap ([WithPoll]); in fair mode (algo.Semaphore.Fair) waiters are served in arrival
// order.
//
// The store's clock decides when leases expire; the semaphore sleeps, and reads Deadline, on
// the store's clock when it reports one (store.Clocked), else on real time, unless
// [WithClock] sets another.
//
// docs/semaphore.md explains leases and their deadline, the store's keys and script, why
// waiters poll rather than subscribe, and the failure modes.
package semaphore
