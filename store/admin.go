package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/ratekit/limiter/algo"
)

// Admin is optional: a store that implements it lets operators look at a key's state
// without spending it (Peek) and forget it (Reset), as limiter's Peek and Reset do. Both
// stores of the module implement it; a store that does not keeps working for everything
// else, and the callers that need it report ErrUnsupported.
//
// Both calls take the arguments, the checks and the errors of Store.Apply; each is
// one atomic step on the key (one round trip on Redis).
type Admin interface {
	// Peek answers what Apply(ctx, key, a, req) would answer at the store's now, except
	// that Remaining is what is available before the request (see algo.Peek), and
	// changes nothing: it consumes no permit, creates no key, and does not move the
	// key's expiry (its TTL, or the local store's idle time).
	Peek(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error)
	// Reset forgets the state key holds under each of rules (every key of its slot: a
	// sliding log's list and its total, say), so that the next Apply finds it fresh. The
	// state of key under other slots is kept. At least one rule is required; the rules
	// are forgotten at once, as one step. The new state must not take the permits of
	// the old one back: the stores of the module mark each state they reset with the
	// Reset's instant and, while the mark lasts (twice the time a drained state takes to
	// be fresh again, after which such a refund can add nothing), drop a Refund whose
	// grant acts before it. A refund of a grant acting after it reaches the new state,
	// whenever it was made: a reservation still queued at the Reset, whose permits the
	// new state never counted, acts after the Reset or, refunded, leaves them to it.
	Reset(ctx context.Context, key string, rules ...algo.Algorithm) error
}

// ErrUnsupported reports an optional operation that the store, or the algorithm, does not
// provide (a store without Admin, a custom state that cannot be copied for a peek). It
// wraps errors.ErrUnsupported, so either sentinel matches.
var ErrUnsupported = fmt.Errorf("limiter: not supported by the store: %w", errors.ErrUnsupported)
