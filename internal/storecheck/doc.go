// Package storecheck validates the arguments of store.Store, store.MultiApplier and
// store.SemaphoreStore calls, and the caller's context, the same way for every store of the
// module (local, distributed) and for the facade that calls them. store/storetest checks
// the behaviour these functions give the stores.
package storecheck
