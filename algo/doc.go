// Package algo holds the rate-limiting algorithms: their configuration structs, their pure
// state transitions in Go (the reference) and, beside each, a Lua twin that performs the
// same arithmetic atomically inside Redis.
//
// Every config struct implements [Algorithm] by value:
//
//	FixedWindow{Limit, Window}            count per epoch-aligned window; cheapest, allows 2×Limit across a boundary
//	SlidingWindowLog{Limit, Window}       exact: no window of length Window ever holds more than Limit; memory O(Limit)
//	SlidingWindowCounter{Limit, Window}   previous window weighted by its overlap; O(1) memory, approximate
//	TokenBucket{Rate, Burst}              starts full; refills at Rate; arithmetic identical to golang.org/x/time/rate
//	LeakyBucket{Rate, Capacity}           meter when MaxWait is 0; a shaping queue (evenly spaced output) when reserving
//	GCRA{Rate, Burst}                     one timestamp per key; admits as a token bucket of rate 1e6/ceil(1e6/Rate)
//	SmoothBursty{Rate, MaxBurstSeconds}   Guava's SmoothBursty: paces requests; a large one is paid by the next caller
//	SmoothWarmingUp{Rate, Warmup, ...}    Guava's SmoothWarmingUp: slow after idle, speeding up to Rate over Warmup
//
// [Semaphore] is not a rate but a concurrency limit (at most Permits holders, each with a
// lease); [SemaphoreState] is its Go reference transition, used by the stores that
// implement store.SemaphoreStore.
//
// [Named] gives an algorithm a state slot of its own, so that two rules of one algorithm
// (say two TokenBuckets of different rates) can limit the same key side by side;
// [CloneState] copies a state, which lets a store apply several rules all or nothing;
// [QuotaOf] states a rule's [Quota] (its limit and the span over which it earns it back),
// which describes it to clients without knowing its type.
//
// Each algorithm lives in one Go file and its Lua twin beside it (token_bucket.go and
// token_bucket.lua): the config, the state and its CloneState, the transitions, the embedded
// script with its argument encoding, and the Quota. docs/algorithms.md ("Adding an
// algorithm") lists what a new one touches.
//
// # Units and conventions
//
// Time inside every transition is an int64 count of microseconds since the Unix epoch; the
// store supplies it. Rates are permits per second. Windows are aligned to the epoch (window
// index = now / Window) so every process agrees on the boundaries. A [Request] with MaxWait 0
// is granted only when permits are available now; with MaxWait > 0 a grant may be a
// reservation whose Wait the caller must sleep; requests are served first come, first
// served, so a later request never overtakes a reservation already queued (the one
// exception is the LeakyBucket meter: a MaxWait 0 request that fits the bucket is granted
// at once, beside the shaping queue; see its doc).
//
// A [Decision] is never an error: a denial is a result. Errors come only from Validate.
// ResetAfter tells the store when the state will equal a fresh one: the local store evicts
// the key then, the Redis store sets the key's PEXPIRE to it.
package algo
