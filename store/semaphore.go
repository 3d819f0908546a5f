package store

import (
	"context"
	"time"

	"github.com/ratekit/limiter/algo"
)

// SemaphoreStore hosts counting semaphores with leases (see algo.Semaphore), named by opaque
// strings, whose holders are identified by caller-made owner tokens, unique per lease. Package
// semaphore builds the blocking API on top of it; the local and Redis stores implement it.
//
// Implementations are safe for concurrent use. Each call is one atomic step at the store's
// now, with the rules stated on each method below, and never blocks. The config travels with each
// call rather than being stored, so every caller of one name must use the same config.
//
// Errors: an empty name wraps ErrInvalidKey, an empty token algo.ErrInvalidRequest, an
// invalid config algo.ErrInvalidConfig; after Close, ErrClosed; a backend failure wraps
// ErrUnavailable. A denial is a result, not an error. A call whose context is done changes
// nothing and returns the context's error, as Store's calls do, so releasing a lease needs a
// live context (for example context.WithoutCancel(ctx)).
type SemaphoreStore interface {
	// Acquire tries once to grant token a permit of the semaphore name. A token that
	// already holds a live lease is granted again and its lease extended (so a retried
	// call whose reply was lost takes no second permit). In fair mode an acquirer that is
	// not granted keeps its place in the queue (its ticket) until now + queueTTL, and
	// refreshes it by calling again; queueTTL ≤ 0 tries without queueing (a newcomer is
	// still never granted ahead of a live waiter).
	Acquire(ctx context.Context, name string, cfg algo.Semaphore, token string, queueTTL time.Duration) (algo.SemaphoreResult, error)
	// Release gives back token's permit and removes token from the fair queue. It
	// reports whether token held a live lease: false for an expired lease, a token already
	// released, or one that never held the semaphore.
	Release(ctx context.Context, name, token string) (bool, error)
	// Renew extends token's live lease to now + cfg.LeaseTTL and reports true, or reports
	// false, changing nothing, when token holds no live lease (an expired lease is never
	// renewed, even if nobody took its permit).
	Renew(ctx context.Context, name string, cfg algo.Semaphore, token string) (bool, error)
	// Holders returns the number of live leases of the semaphore name.
	Holders(ctx context.Context, name string) (int64, error)
}
