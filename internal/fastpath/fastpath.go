// Package fastpath is the optional capability a store offers the limiter's Allow for its
// fast path, defined here so that the limiter finds it without importing the store.
package fastpath

import (
	"context"
	"time"

	"github.com/ratekit/limiter/algo"
)

// Applier is a store.Store whose Apply can also return the Decision's fields one by one,
// in registers: the caller stores each where it wants it, with no struct copy. (A 56-byte
// Decision returned by value is copied with 16-byte loads that stall on the 8-byte stores
// just made to it; a pointer to write it to would escape through an interface call.)
type Applier interface {
	ApplyFields(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (allowed bool, limit, remaining int64, retryAfter, resetAfter, wait time.Duration, at int64, err error)
}
