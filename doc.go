// Package limiter is a keyed rate limiter for Go: one [Limiter] applies one algorithm to
// any number of keys (users, IP addresses, API tokens), with its state either in memory or
// shared between processes in Redis.
//
//	st, err := local.New()                  // or distributed.New(redisClient)
//	...
//	defer st.Close()
//	l, err := limiter.New(st, algo.TokenBucket{Rate: 10, Burst: 20})
//	...
//	d, err := l.Allow(ctx, "user:42")
//	if err == nil && !d.Allowed {
//		// reject; d.RetryAfter says when to come back
//	}
//
// The algorithm is a config struct of package algo (FixedWindow, SlidingWindowLog,
// SlidingWindowCounter, TokenBucket, LeakyBucket, GCRA, ...), validated by [New] and
// replaceable at run time with [Limiter.SetAlgorithm]. The state lives in a store.Store,
// which owns "now": package local keeps it in memory, package distributed in Redis, with
// the same decisions. The Limiter sleeps on the store's clock (store.Clocked) unless
// [WithClock] sets another; tests give the store a clockx.Fake and never sleep for real.
//
// There are three ways to ask. [Limiter.Allow] and [Limiter.AllowN] answer at once with a
// [Decision] (a denial is a result, not an error). [Limiter.Reserve] grants permits usable
// after a delay and returns a [Reservation] to sleep on or cancel. [Limiter.Wait],
// [Limiter.WaitN] and [Limiter.TryAcquire] block until granted, holding no lock while they
// sleep, and fail at once with [ErrExceedsLimit] or [ErrWouldExceedDeadline] when waiting
// cannot help. Requests are served first come, first served.
//
// When the store is unreachable the Limiter's [FailurePolicy] answers: [FailClosed] (the
// default) denies and returns the error, [FailOpen] allows and reports it (so look at the
// Decision, not the error), [Fallback] decides with another Limiter. [WithTimeout] bounds
// each store call and a circuit breaker ([CircuitBreaker], on by default) stops calling
// a store that is down. A store failure wraps [store.ErrUnavailable]; bad input is
// [algo.ErrInvalidRequest], [algo.ErrInvalidConfig] or [store.ErrInvalidKey] under every policy.
//
// A call whose context is already done returns the context's error with a zero Decision
// and takes nothing; it never wraps store.ErrUnavailable nor reaches the failure policy.
// [Reservation.Cancel] still reaches the store after its context is done, so a cancelled
// caller leaks nothing.
//
// [All] combines limiters into one that grants a request only when every rule does
// ("100 per second AND 20 per 100 ms"). Package semaphore limits concurrency (at most N
// holders at once, with leases), package smooth is Guava's RateLimiter, and package
// httplimit is net/http middleware.
//
// For operators, [Limiter.Peek] answers what Allow would, taking nothing (with what the
// key has now as Remaining), and
// [Limiter.Reset] forgets a key's state; both need a store implementing store.Admin.
// [WithObserver] reports every decision, the store's latency and the circuit breaker's
// changes to an [Observer] (the module otellimit records them as OpenTelemetry metrics),
// and [WithShadow] decides and reports every request but lets every caller through, to try
// a limit before enforcing it (docs/observability.md).
//
// The docs/ directory explains the design: algorithms.md (each algorithm, config changes),
// composite.md (All), distributed.md (the Redis store, failure modes and policies),
// local.md, semaphore.md, httplimit.md and observability.md.
package limiter
