// Package leasing serves hot keys from local slices of their quota: a [Store] wraps any
// [store.Store] (typically the Redis store of package distributed), takes Slice permits of
// a key in one call to it, and grants them to the process's requests locally, with no
// round trip, until they run out or the lease ends; then it gives back what is left (a
// Refund) and takes the next slice. One caller takes it; the callers that arrive while
// it is in flight wait, and are granted from the new slice, in turn, by the caller that
// took it before they wake.
//
// The inner store counts every slice when it grants it, so it never admits more than the
// algorithm's limit: leasing moves permits in time, it does not create any. What it costs:
//
//   - Over-admission in time: a permit counted at the slice's grant is used up to the
//     lease's end (WithTTL) later. In any span,
//     the permits used by all processes exceed what the algorithm admits over that span by
//     at most processes × Slice (one live lease per process and key). For a fixed window,
//     whose ResetAfter is the window's end, a lease never outlives its window, so with
//     clocks that agree no window is exceeded at all.
//   - Under-admission: permits held in one process's lease are invisible to the others,
//     at most processes × Slice at once. What a lease gives back is what the algorithm's
//     Refund restores: for a window, only while the window lasts; for the buckets, the
//     leftover minus what was granted after the slice (golang.org/x/time/rate's CancelAt),
//     so leftovers returned late are partly lost.
//
// Nothing else creates permits: a lease evicted to make room (WithMaxKeys) gives its
// leftover back to its own key; a lease out of the table is never granted from or filled
// again (a caller holding it looks the key up anew); Close waits for the slices in flight
// and the leftovers of evicted leases on their way back, and gives back every other
// leftover; while Reset runs, the key's requests go to the inner store,
// a slice that lands after it began grants only its caller's request (as a plain store's
// request in flight does), and a Refund of a grant made before it goes to the inner store,
// as on a plain store.
//
// A key over its limit costs the inner store less than without leasing, never more than
// one call per request plus a few per denied slice: when a slice is denied, the store
// takes the permits the denial reports left (the quota's tail) in one call, asks for no
// slice until the slice's RetryAfter, and remembers the inner store's denial of a request
// until that denial's RetryAfter, answering the same request locally meanwhile (one
// caller asks again when it expires; the others wait for its answer). Such a key costs
// about two calls per permit it earns and one per slice's RetryAfter, whatever the
// number of requests.
//
// A Charge (algo.Request.Charge) takes what it can from the key's live lease and charges
// the rest to the inner store: every permit charged is counted once, on a slice the inner
// store already counted or on the inner store, so a charge adds nothing to the bounds
// above. It takes only its own process's lease: another process's lease keeps granting
// what its slice counted before the charge (within the processes × Slice above). Once a
// charge has reached the inner store, a refund of a grant of the lease goes there too,
// into the key's debt, as on a plain store. A charge never takes a slice, never waits for
// one in flight, and is never answered from a remembered denial (a charge is never
// denied). A charge the lease covers is answered as a grant from it (RetryAfter 0, even
// when nothing is left: the inner store alone knows when the key's next permit comes);
// one that reaches the inner store gets its answer.
//
// Leased: the algorithms that state algo.Leasable (token bucket, GCRA, leaky bucket, fixed
// window, sliding log and sliding counter), also wrapped in algo.Named or any wrapper with
// Unwrap, for requests with MaxWait 0 and N ≤ Slice. Everything else goes to the inner
// store call by call: reservations (MaxWait > 0), larger requests, the smooth limiters (a
// slice would be granted at once and break their pacing), algo.Penalty (a slice denied
// would be an offence no request committed), algorithms that do not state
// algo.Leasable, and configs that == cannot compare (a custom wrapper holding a slice, a
// map or a func, directly or in an interface): a lease compares each request's config
// with the one its slice was taken under, so such a config is sent to the inner store,
// which accepts it as a plain store does.
//
// Conformance: a Store passes storetest.RunContracts (bad input, unusual keys, key and
// slot independence, the bound under concurrency, Close, done contexts, Admin's bad
// input; storetest_test.go), not the exact parts of storetest.Run, which do not apply by
// design: a leased grant is decided on the lease, so its Remaining, ResetAfter and
// RetryAfter describe the lease rather than the key's state under the algorithm, its At
// is the instant the slice was granted (what a Refund of it names), and permits counted
// when the slice was granted are handed out up to a lease's end later (see above). The
// scenario tables, the probes of each field, the random properties on the grants'
// instants and Admin's model all read those fields exactly. The bounds that do hold are
// tested in model_test.go and cost_test.go.
//
// docs/distributed.md ("Quota leasing") has the bounds and the figures.
package leasing
