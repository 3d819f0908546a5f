// Package algo holds the rate-limiting algorithms: their configuration structs, their pure
// state transitions in Go (the reference) and, beside each, a Lua twin that performs the
// same arithmetic atomically inside Redis. It uses the standard library only.
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
// [Semaphore] is a concurrency limit rather than a rate (at most Permits holders, each with
// a lease), hosted by the stores that implement store.SemaphoreStore. [Named] gives a
// rule a state slot of its own, so two rules of one algorithm can limit the same key side by
// side; a state that implements [StateCloner] copies itself, so a store can apply several
// rules all or nothing; [QuotaOf] states a rule's [Quota] (its limit and the
// span over which it earns it back); [ParseQuota] reads one from a rate string ("100/min",
// "100 per 10s", "100-M") and [FromQuota] makes an algorithm that grants it;
// [CapabilitiesOf] states what stores and features may do with a rule (lease its permits,
// cache its denials, share a state when full). QuotaOf and CapabilitiesOf look through
// wrappers with an Unwrap method, as errors.As does.
//
// # Units and conventions
//
// Time inside every transition is an int64 count of microseconds since the Unix epoch, which
// the store supplies. Rates are permits per second. Windows are aligned to the epoch. A
// [Request] with MaxWait 0 is granted only when permits are available now; with MaxWait > 0
// a grant may be a reservation whose Wait the caller must sleep, served first come, first
// served (the LeakyBucket meter is the one exception; see its doc). A [Decision] is never an
// error: a denial is a result, and errors come only from Validate. ResetAfter says when the
// state will equal a fresh one, which is when a store may forget the key.
//
// docs/algorithms.md has each algorithm's formulas, diagrams and trade-offs, and, under
// "Adding an algorithm", the files a new one touches (one .go, one .lua, one line in the CLI).
package algo
