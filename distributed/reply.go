package distributed

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/storecheck"
	"github.com/ratekit/limiter/store"
)

// errBadReply is wrapped by every reply that does not follow the calling convention.
var errBadReply = errors.New("reply does not follow the script calling convention")

// parseDecision turns the seven integers of an "apply" reply into a Decision:
// {allowed (0/1), limit, remaining, retry_after_us, reset_after_us, wait_us, at_us}.
// Anything else is an error that says what arrived; it never panics.
func parseDecision(reply any) (algo.Decision, error) {
	vals, ok := reply.([]any)
	if !ok || len(vals) != 7 {
		return algo.Decision{}, fmt.Errorf("%w: got %s, want an array of 7 integers", errBadReply, describe(reply))
	}
	var n [7]int64
	for i, v := range vals {
		x, ok := v.(int64)
		if !ok {
			return algo.Decision{}, fmt.Errorf("%w: element %d of %s is not an integer", errBadReply, i+1, describe(reply))
		}
		n[i] = x
	}
	if n[0] != 0 && n[0] != 1 {
		return algo.Decision{}, fmt.Errorf("%w: allowed is %d, want 0 or 1", errBadReply, n[0])
	}
	for i, name := range [...]string{1: "limit", 2: "remaining", 3: "retry_after_us", 4: "reset_after_us", 5: "wait_us"} {
		if i > 0 && n[i] < 0 {
			return algo.Decision{}, fmt.Errorf("%w: %s is %d, want ≥ 0", errBadReply, name, n[i])
		}
	}
	return algo.Decision{
		Allowed:    n[0] == 1,
		Limit:      n[1],
		Remaining:  n[2],
		RetryAfter: micros(n[3]),
		ResetAfter: micros(n[4]),
		Wait:       micros(n[5]),
		At:         n[6],
	}, nil
}

// micros converts a non-negative count of µs to a Duration, with algo.MaxMicros and beyond
// as algo.Never, exactly as the Go transitions do.
func micros(us int64) time.Duration {
	if us >= algo.MaxMicros {
		return algo.Never
	}
	return time.Duration(us) * time.Microsecond
}

// describe renders a reply for an error message, shortened so that junk cannot flood logs.
func describe(reply any) string {
	var b strings.Builder
	describeTo(&b, reply, 0)
	const max = 200
	if b.Len() > max {
		return b.String()[:max] + "…"
	}
	return b.String()
}

func describeTo(b *strings.Builder, v any, depth int) {
	switch v := v.(type) {
	case nil:
		b.WriteString("nil")
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case string:
		b.WriteString(strconv.Quote(v))
	case []any:
		if depth == 0 {
			fmt.Fprintf(b, "an array of %d ", len(v))
		}
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(' ')
			}
			if b.Len() > 200 || depth > 4 {
				b.WriteString("…")
				break
			}
			describeTo(b, e, depth+1)
		}
		b.WriteByte(']')
	default:
		fmt.Fprintf(b, "%T(%v)", v, v)
	}
}

// fail wraps an error of a script call with store.ErrUnavailable, the operation, the
// algorithm and the user key. A WRONGTYPE reply gets its own explanation: the key is in
// use by other data, which no retry will fix. store.ErrClosed (from a batcher closed
// under the call) is returned as it is, and so is ctx's error once ctx is done.
func (s *Store) fail(ctx context.Context, op, key string, keys []string, a algo.Algorithm, err error) error {
	if err == store.ErrClosed {
		return err // the batcher was closed under the call: no backend failure
	}
	if cerr := storecheck.Context(ctx); cerr != nil {
		// The caller gave up: its cancellation is not the store's failure (see store.Store).
		return fmt.Errorf("distributed: %s %s on key %s: %w", op, a.Name(), quoteKey(key), cerr)
	}
	if isWrongType(err) {
		return fmt.Errorf("%w: distributed: %s %s on key %s: Redis key %s (or a key beside it) "+
			"holds data of another type, so it cannot hold limiter state; is something else "+
			"writing under the prefix %q? (%w)",
			store.ErrUnavailable, op, a.Name(), quoteKey(key), quoteKey(keys[0]), s.prefix, err)
	}
	return fmt.Errorf("%w: distributed: %s %s on key %s: %w", store.ErrUnavailable, op, a.Name(), quoteKey(key), err)
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
