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
// # Algorithms
//
// The algorithm is a config struct of package algo: FixedWindow, SlidingWindowLog,
// SlidingWindowCounter, TokenBucket, LeakyBucket or GCRA (see that package for their
// trade-offs). [New] validates it; [Limiter.SetAlgorithm] replaces it at run time, keeping
// each key's state when the new algorithm keeps the same state (algo.Algorithm.Slot), so a
// rate can change without resetting every bucket.
//
// # Three ways to ask
//
//   - [Limiter.Allow] and [Limiter.AllowN] answer at once: allowed (the permits are taken)
//     or denied, with a [Decision] giving Limit, Remaining, RetryAfter and ResetAfter, the
//     figures HTTP rate-limit headers need. A denial is a result, not an error.
//   - [Limiter.Reserve] takes permits that may only be used after a delay (up to a maxWait
//     bound) and returns a [Reservation] to sleep on or to cancel, giving the permits back.
//   - [Limiter.Wait], [Limiter.WaitN] and [Limiter.TryAcquire] block until the permits are
//     granted, the context ends, or (TryAcquire) a timeout would be exceeded. They reserve
//     first and then sleep, so no lock or connection is held while sleeping, and a request
//     that can never succeed (more than the limit, or a wait past the context's deadline)
//     fails at once with [ErrExceedsLimit] or [ErrWouldExceedDeadline].
//
// Requests are first come, first served: a later request never overtakes permits already
// reserved.
//
// # Stores
//
// A store.Store holds the state and owns "now": package local keeps it in memory for one
// process; package distributed keeps it in Redis (one atomic Lua script per decision, Redis
// server time), so every process sharing the Redis sees one limit. Both compute the same
// decisions, with the same arithmetic. The Limiter sleeps (and times reservations) on the
// store's clock when the store reports one (store.Clocked: both stores do), else on real
// time; [WithClock] overrides it. Tests give the store a clockx.Fake, so a minute of
// traffic runs in microseconds without a single real sleep.
//
// # When the store fails
//
// A shared store can be unreachable. What the Limiter answers then is its
// [FailurePolicy] ([WithFailurePolicy]): [FailClosed] (the default) denies and returns the
// error; [FailOpen] allows and reports the error (Allow returns an allowed Decision with a
// non-nil error, so look at the Decision); [Fallback] decides with another Limiter, usually
// an in-memory one at a reduced rate. [WithTimeout] bounds each store call, and a circuit
// breaker, on by default ([WithCircuitBreaker] tunes it, [WithoutCircuitBreaker] removes
// it), stops calling a store that keeps failing for a cool-down, so a dead Redis does not
// add its timeout to every request. [WithErrorHandler] sees every failure.
// Invalid requests and configurations are errors under every policy ([ErrInvalidRequest],
// [ErrInvalidConfig], [ErrInvalidKey]); a store failure wraps [ErrUnavailable], a closed
// store returns [ErrClosed] (the same values as package store's, so errors.Is matches
// either).
//
// # Cancelled contexts
//
// A call whose context is already done returns the context's error (errors.Is with
// context.Canceled or context.DeadlineExceeded) and a denied, zero Decision, and takes
// nothing. It is the caller's error, not the store's: it never wraps [ErrUnavailable],
// never goes through the failure policy, the error handler or the circuit breaker, on
// either store. Giving back is the exception: [Reservation.Cancel] (and a semaphore's
// Lease.Release) still reach the store after the context is done, so a cancelled caller leaks nothing.
// [ErrWouldExceedDeadline] also matches context.DeadlineExceeded.
//
// # Composite limits
//
// [All] combines limiters into one that grants a request only when every rule grants it,
// taking nothing from any rule when one denies; its RetryAfter is the largest among the
// rules that denied. The result is a *Limiter, so Allow, Reserve, Wait, TryAcquire and
// httplimit.Middleware use it unchanged:
//
//	perSecond, _ := limiter.New(st, algo.TokenBucket{Rate: 100, Burst: 100})
//	per100ms, _ := limiter.New(st, algo.Named(algo.TokenBucket{Rate: 200, Burst: 20}, "short"))
//	api, err := limiter.All(perSecond, per100ms) // 100 per second AND 20 per 100 ms
//
// Rules on one store and one key are checked and taken in one atomic step (one lock on the
// local store, one Lua script on Redis). Rules on different keys ([WithKeyFunc]: per user
// AND per item, or a global rule) or different stores are applied in turn, refunding the
// earlier grants when a later rule denies. Two rules of one algorithm on one key need
// distinct state slots: wrap one with algo.Named.
//
// # Concurrency limits
//
// Not every limit is a rate: "at most 5 exports at once" is a semaphore, in package
// semaphore (semaphore.New with an algo.Semaphore). Acquire returns a lease that the
// holder releases (or renews, or keeps alive); a holder that dies without releasing loses
// its permit when the lease expires. On Redis the semaphore is shared by the fleet.
//
// # Guava-style pacing
//
// Package smooth offers Guava's SmoothBursty and SmoothWarmingUp (Acquire, TryAcquire,
// SetRate) over the same stores.
package limiter
