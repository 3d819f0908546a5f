package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/ratekit/limiter/algo"
)

// Store applies rate-limiting transitions to keyed state. Implementations are safe for
// concurrent use and apply each call atomically, at the store's own now. The state a key holds
// under an algorithm is named by the key and the algorithm's Slot, so rules with different
// slots on one key never share state.
//
// A call whose context is already done when it starts does nothing: it returns the context's
// error, with a zero Decision, and consumes and refunds nothing. A call whose context ends
// while the store waits for its backend also returns the context's error, though the backend
// may have applied the call. Neither wraps ErrUnavailable: the error is the caller's. Bad
// input is reported as such whatever the context.
type Store interface {
	// Apply answers req for key under a at the store's now and commits what it grants.
	// It returns an error, wrapping ErrInvalidKey, algo.ErrInvalidConfig or
	// algo.ErrInvalidRequest, for bad input, and a wrapped backend error when the
	// decision could not be made; a denial is a Decision, never an error.
	Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error)
	// Refund gives back n permits of an earlier grant of key under a, identified by the
	// grant's Decision.At, as far as the algorithm allows.
	Refund(ctx context.Context, key string, a algo.Algorithm, n int64, at int64) error
	// Close releases the store's resources. Calls after Close return ErrClosed.
	Close() error
}

// Errors shared by every Store.
var (
	// ErrInvalidKey reports an empty key.
	ErrInvalidKey = errors.New("limiter: invalid key")
	// ErrClosed reports a call on a closed store.
	ErrClosed = errors.New("limiter: store closed")
	// ErrUnavailable wraps a backend failure (Redis down, timeout, reply that does not
	// parse): the decision could not be made. Failure policies key off it.
	ErrUnavailable = errors.New("limiter: store unavailable")
	// ErrKeyUnavailable wraps a failure of one call that says nothing about the backend as
	// a whole: the backend answered, but the state of the call's key, or the script run on
	// it, could not be used (a Redis key holding another type of data, a script error, a
	// reply that does not parse). It wraps ErrUnavailable, so failure policies answer it
	// like any failure, while a circuit breaker, which counts outages of the backend, does
	// not count it: other keys are fine. A store marks such failures itself, since only
	// it knows what its backend's errors mean; any other failure counts as an outage.
	ErrKeyUnavailable = fmt.Errorf("%w for this key", ErrUnavailable)
)
