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
)

// CheckContext returns nil while ctx is live, and ctx.Err() once it is done: stores call it
// before doing anything, so a call on a cancelled or expired context consumes nothing and
// is not mistaken for a store failure. A nil ctx counts as live. It costs one
// non-blocking channel receive, not a lock.
func CheckContext(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
		return nil
	}
}

// Check validates the arguments of an Apply call; stores call it first.
func Check(key string, a algo.Algorithm, req algo.Request) error {
	if key == "" {
		return fmt.Errorf("%w: key must not be empty", ErrInvalidKey)
	}
	if a == nil {
		return fmt.Errorf("%w: algorithm is nil", algo.ErrInvalidConfig)
	}
	if err := a.Validate(); err != nil {
		return err
	}
	return req.Validate()
}
