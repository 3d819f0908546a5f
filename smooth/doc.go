// Package smooth is Guava's RateLimiter in Go: [New] takes an algo.SmoothBursty (Guava's
// RateLimiter.create(rate)) or an algo.SmoothWarmingUp (RateLimiter.create(rate, warmup)),
// as limiter.New and semaphore.New take their algo configs, and returns a limiter with
// blocking [Limiter.Acquire], [Limiter.TryAcquire] with a timeout and [Limiter.SetRate]. Every wait is Guava's to the microsecond: the tests replay scenarios
// recorded from Guava's own implementation (31.1) on both stores.
//
// Acquire reserves at once and sleeps until the permits may be used; it pays for the
// request before it, never for itself, so a large request is granted at once and the next
// caller waits for it:
//
//	l, _ := smooth.New(algo.SmoothBursty{Rate: 5}) // one permit every 200 ms
//	l.Acquire(ctx, 1)                              // returns at once
//	l.Acquire(ctx, 1)                              // sleeps 200 ms
//	l.Acquire(ctx, 10)                             // sleeps 200 ms (paying for the previous one)
//	l.Acquire(ctx, 1)                              // sleeps 2 s (paying for the 10)
//
// A SmoothBursty saves up to one second (MaxBurstSeconds) of unused rate as permits taken
// without waiting; a SmoothWarmingUp starts cold (ColdFactor times slower) and speeds up to
// its rate over the warm-up period.
//
// A limiter keeps its state in a private in-memory store by default, or under a key of any
// store.Store with [WithStore]: limiters in many processes sharing one key of a Redis store
// are paced as one. It sleeps on the store's clock (store.Clocked) unless [WithClock] says
// otherwise; tests pass a clockx.Fake. Context deadlines are real time.
//
// docs/algorithms.md ("Smooth: Guava's RateLimiter") has the model, the warm-up diagram,
// expiry in a shared store and the differences from Guava.
package smooth
