package limiter

import (
	"context"

	"github.com/ratekit/limiter/store"
)

// A call whose context is already done does nothing and returns the context's error
// (errors.Is(err, context.Canceled) or context.DeadlineExceeded holds) with a denied, zero
// Decision: it consumes nothing, it is not a store failure (the error does not wrap
// store.ErrUnavailable), so it never goes through the failure policy, never reaches the
// error handler and never counts toward the circuit breaker. Every store of the module
// follows this rule (see store.Store); the facade adds it where it answers without the
// store, when the breaker is open.
//
// Cleanup is the exception: giving permits back (Reservation.Cancel, the rollback of a
// composite, a Wait that gives up) and releasing a semaphore lease still reach the store
// when the caller's context is done, so that a cancelled caller does not leak what it held.

// cleanupCtx returns ctx, or when ctx is done a context with ctx's values that is not, so
// that a refund or a release made after the caller gave up still reaches the store. The
// store's and the limiter's timeouts still bound the call.
func cleanupCtx(ctx context.Context) context.Context {
	if ctx != nil && store.CheckContext(ctx) != nil {
		return context.WithoutCancel(ctx)
	}
	return ctx
}
