// Package smooth is Guava's RateLimiter in Go: SmoothBursty ([NewBursty], Guava's
// RateLimiter.create(rate)) and SmoothWarmingUp ([NewWarmingUp], RateLimiter.create(rate,
// warmup)), with blocking [Limiter.Acquire], [Limiter.TryAcquire] with a timeout and
// [Limiter.SetRate]. Every wait is Guava's to the microsecond: the tests replay scenarios
// recorded from Guava's own implementation (31.1) on both stores.
//
// # The model
//
// A limiter remembers the instant at which the next request may go (nextFreeTicket) and,
// for the time it was not used, a number of stored permits. Acquire(n) reserves at once and
// sleeps until nextFreeTicket: it pays for the request before it, never for itself. So the
// first request after idleness is never delayed, and a large request is granted at once
// while the next caller waits for it, which lets expensive work start without idling.
//
//	l, _ := smooth.NewBursty(5)   // 5 permits per second, one every 200 ms
//	l.Acquire(ctx, 1)             // returns at once
//	l.Acquire(ctx, 1)             // sleeps 200 ms
//	l.Acquire(ctx, 10)            // sleeps 200 ms (paying for the previous one)
//	l.Acquire(ctx, 1)             // sleeps 2 s (paying for the 10)
//
// NewBursty saves up to one second of unused rate (WithMaxBurstSeconds) as stored permits,
// taken without waiting: after a second of idleness, 5 requests go through at once. A new
// limiter starts with none.
//
// NewWarmingUp starts cold and treats stored permits as expensive instead: with cold factor
// 3 (WithColdFactor), a cold limiter spaces permits up to 3 times the stable interval, and
// the spacing falls linearly to the stable interval over the warm-up period of saturated
// use. Left unused for the warm-up period, it is cold again. The diagram in
// docs/algorithms.md (docs/smooth-warmup.svg) plots the interval against the stored
// permits: the time taken by k permits is the area under the curve over the k permits
// spent.
//
// TryAcquire(n, timeout) returns false at once, reserving nothing, when the permits could
// not be used within timeout, or before the context's deadline; otherwise it reserves and
// sleeps like Acquire. Acquire with a context deadline likewise returns
// ErrWouldExceedDeadline at once, reserving nothing, when its wait would end after it. SetRate keeps
// what has been saved up in proportion (stored permits are rescaled to the new maximum), and
// the first request after it still pays for the previous one at the old rate. A rate of
// +Inf makes every permit free.
//
// # Stores, processes and time
//
// By default a limiter keeps its state in a private in-memory store. With WithStore it
// keeps it under a key of any store.Store: limiters in many processes sharing one key of a
// distributed.Store (Redis) are paced as one Guava limiter would pace their callers put
// together, because each reservation is one atomic script in Redis, at the server's time;
// each caller then sleeps locally, holding no lock and no connection. All limiters on one
// key must be given the same config: a reservation with another rate changes the key's
// rate, as SetRate does.
//
// The store owns "now" (Redis uses its TIME) and the limiter sleeps on the store's clock
// (store.Clocked). WithClock sets both for the private store; with WithStore it only
// overrides the clock slept on. Tests pass a clockx.Fake, on which sleeps advance virtual
// time at once.
//
// # Differences from Guava
//
//   - Cancellation: Acquire and TryAcquire take a context. A wait that would end after its
//     deadline is refused up front (as limiter.WaitN and limiter.TryAcquire refuse it); the
//     deadline is real time, even when the limiter sleeps on a fake clock. If the context
//     ends during the sleep they return its error (Acquire with the time slept so far) and
//     ask the store to give the permits back, which Guava's algorithms do not: later
//     callers are already scheduled after them, so the permits stay taken.
//   - Bounds: finite rates must lie in [1e-15, 1e15] per second (Guava accepts any positive
//     double), n in [1, 2^53]; waits of 31.7 years or more are not granted (Acquire returns
//     ErrWaitTooLong) where Guava saturates at 2^63 µs.
//   - A warm-up shorter than 1 µs means no warm-up; Guava computes 0/0 there and stops
//     limiting once idle.
//   - Rate returns the rate as given, not Guava's 1e6 / (1e6 / rate), which may differ in
//     the last bit.
//   - In a shared store a key is forgotten once it has been unused long enough (see
//     algo.SmoothBursty): a SmoothWarmingUp key when it is cold again, exactly as Guava would
//     have it; a SmoothBursty key one minute after it is full, after which it restarts
//     empty, losing its saved-up burst (never admitting more than Guava). The private store
//     never forgets.
package smooth
