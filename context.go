package limiter

import (
	"context"

	"github.com/ratekit/limiter/internal/ctxutil"
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
// composite, a Wait that gives up) and releasing a lease (package semaphore) still reach
// the store when the caller's context is done, so that a cancelled caller does not leak
// what it held.

// cleanupCtx is ctxutil.Cleanup: a done ctx becomes one that is not, with its values, so
// that a refund made after the caller gave up still reaches the store.
func cleanupCtx(ctx context.Context) context.Context { return ctxutil.Cleanup(ctx) }
