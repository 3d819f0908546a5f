package store

import (
	"context"
	"time"

	"github.com/ratekit/limiter/algo"
)

// SemaphoreStore hosts counting semaphores with leases (see algo.Semaphore): named
// semaphores whose holders are identified by owner tokens. The local store (package local)
// and the Redis store (package distributed) implement it; package semaphore builds the
// blocking API on top of it.
//
// Each call is one atomic step at the store's now (its clock, or Redis's TIME), with the
// rules of algo.SemaphoreState: leases and queue places whose expiry has passed are
// forgotten first, then the call decides. Nothing blocks: a call tries once and answers.
// Implementations must be safe for concurrent use.
//
// The config is passed with each call that needs it rather than stored, so the store keeps
// only holders and waiters; every caller of one name must use the same config (a caller
// with more Permits would admit more holders than the others expect). Names and tokens
// are opaque strings; tokens are created by the caller, unique per lease (package
// semaphore uses 128 random bits).
//
// Errors: an empty name wraps ErrInvalidKey, an empty token algo.ErrInvalidRequest, an
// invalid config algo.ErrInvalidConfig; after Close, ErrClosed; a backend failure wraps
// ErrUnavailable. A denial is a result, never an error. A call whose context is done
// changes nothing and returns the context's error, not ErrUnavailable, as Store's calls
// do: so a lease is released on a done context only by passing a live one (for example
// context.WithoutCancel(ctx)).
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
