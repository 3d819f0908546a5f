package distributed

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/storecheck"
	"github.com/ratekit/limiter/store"
)

// fail wraps an error of a script call with store.ErrUnavailable, the operation, the
// algorithm and the user key (see callFailed). store.ErrClosed (from a batcher closed
// under the call) is returned as it is.
func (s *Store) fail(ctx context.Context, op, key string, keys []string, a algo.Algorithm, err error) error {
	if err == store.ErrClosed {
		return err // the batcher was closed under the call: no backend failure
	}
	return s.callFailed(ctx, fmt.Sprintf("%s %s on key %s", op, a.Name(), quoteKey(key)), keys, err)
}

// callFailed is the error of a script call on keys that failed with err; what names the
// call ("apply token-bucket on key \"k\""). Once ctx is done it wraps ctx's error only: the
// caller gave up, which is not the store's failure (see store.Store). Otherwise it wraps
// store.ErrUnavailable and err, and a WRONGTYPE reply gets its own explanation: a key is
// in use by other data, which no retry will fix.
func (s *Store) callFailed(ctx context.Context, what string, keys []string, err error) error {
	if cerr := storecheck.Context(ctx); cerr != nil {
		return fmt.Errorf("distributed: %s: %w", what, cerr)
	}
	if isWrongType(err) {
		which := "Redis key " + quoteKey(keys[0])
		if len(keys) > 1 {
			which = "a Redis key among " + quoteKey(strings.Join(keys, " "))
		}
		return fmt.Errorf("%w: distributed: %s: %s holds data of another type, so it cannot hold "+
			"limiter state; is something else writing under the prefix %q? (%w)",
			store.ErrUnavailable, what, which, s.prefix, err)
	}
	return fmt.Errorf("%w: distributed: %s: %w", store.ErrUnavailable, what, err)
}

// badReply is the error of a script reply that does not follow the calling convention.
func badReply(what string, err error) error {
	return fmt.Errorf("%w: distributed: %s: %w", store.ErrUnavailable, what, err)
}

// isWrongType reports a WRONGTYPE error, which Redis 7 passes through a script unchanged
// and older versions embed in the script's error text.
func isWrongType(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	return strings.Contains(re.Error(), "WRONGTYPE")
}
