package ctxutil

import (
	"context"

	"github.com/ratekit/limiter/internal/storecheck"
)

// Cleanup returns ctx, or when ctx is done a context with ctx's values that is not, so
// that a refund or a release made after the caller gave up still reaches the store. The
// store's and the caller's own timeouts still bound the call.
func Cleanup(ctx context.Context) context.Context {
	if ctx != nil && storecheck.Context(ctx) != nil {
		return context.WithoutCancel(ctx)
	}
	return ctx
}
