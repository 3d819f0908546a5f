// Package limiter is a keyed rate limiter: one [Limiter] applies one algorithm of package
// algo to any number of keys, with its state in a store.Store (package local: in memory;
// package distributed: in Redis, shared between processes, deciding alike).
//
//	st, err := local.New() // or distributed.New(redisClient)
//	...
//	l, err := limiter.New(st, algo.TokenBucket{Rate: 10, Burst: 20})
//	...
//	d, err := l.Allow(ctx, "user:42")
//	if err == nil && !d.Allowed {
//		// reject; d.RetryAfter says when to come back
//	}
//
// [Limiter.Allow] answers at once with a [Decision] (a denial is a result, not an error);
// [Limiter.Reserve] grants permits usable after a delay; [Limiter.Wait], [Limiter.WaitN]
// and [Limiter.TryAcquire] block until granted. The store owns "now"; the Limiter sleeps
// on the store's clock (store.Clocked) unless [WithClock] sets another.
//
// When the store is unreachable the [FailurePolicy] answers; [WithTimeout] bounds each
// store call and a [CircuitBreaker] stops calling a store that is down. A call whose
// context is done returns the context's error and takes nothing. [All] combines limiters;
// [Limiter.Peek] and [Limiter.Reset] are for operators; [WithObserver] and [WithShadow]
// report decisions. docs/ explains the design (algorithms.md, composite.md, ...).
package limiter
