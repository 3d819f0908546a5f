package distributed

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/storecheck"
	"github.com/ratekit/limiter/store"
)

// fail wraps an error of a script call with store.ErrUnavailable, the operation, the
// algorithm and the user key (see callFailed).
func (s *Store) fail(ctx context.Context, op, key string, keys []string, a algo.Algorithm, err error) error {
	return s.callFailed(ctx, fmt.Sprintf("%s %s on key %s", op, a.Name(), quoteKey(key)), keys, err)
}

// callFailed is the error of a script call on keys that failed with err; what names the
// call ("apply token-bucket on key \"k\""). It is where the store says what its failures
// mean, once for every call:
//
//   - store.ErrClosed (from a batcher closed under the call) is returned as it is: no
//     backend failure;
//   - once ctx is done, it wraps ctx's error only: the caller gave up, which is not the
//     store's failure (see store.Store);
//   - an error of the call's key or script (keyFault: WRONGTYPE, a script error) wraps
//     store.ErrKeyUnavailable: Redis answered, so the failure policy answers the call but
//     the circuit breaker does not count it; a WRONGTYPE reply gets its own explanation,
//     since no retry will fix a key in use by other data;
//   - anything else (the network, a timeout, LOADING, BUSY, READONLY, CLUSTERDOWN...) is an
//     outage and wraps store.ErrUnavailable.
//
// A deadline that passed while go-redis kept failing to dial names the dial's error too
// (see dialWatch).
func (s *Store) callFailed(ctx context.Context, what string, keys []string, err error) error {
	if err == store.ErrClosed {
		return err
	}
	if cerr := storecheck.Context(ctx); cerr != nil {
		if cause := s.dialCause(err); cause != nil {
			return fmt.Errorf("distributed: %s: %w (cannot connect to Redis: %w)", what, cerr, cause)
		}
		return fmt.Errorf("distributed: %s: %w", what, cerr)
	}
	if isWrongType(err) {
		which := "Redis key " + quoteKey(keys[0])
		if len(keys) > 1 {
			which = "a Redis key among " + quoteKey(strings.Join(keys, " "))
		}
		return fmt.Errorf("%w: distributed: %s: %s holds data of another type, so it cannot hold "+
			"limiter state; is something else writing under the prefix %q? (%w)",
			store.ErrKeyUnavailable, what, which, s.prefix, err)
	}
	if keyFault(err) {
		return fmt.Errorf("%w: distributed: %s: %w", store.ErrKeyUnavailable, what, err)
	}
	if cause := s.dialCause(err); cause != nil {
		return fmt.Errorf("%w: distributed: %s: cannot connect to Redis: %w; %w", store.ErrUnavailable, what, cause, err)
	}
	if isDial(err) { // a refused connection, answered at once (see dialWatch)
		return fmt.Errorf("%w: distributed: %s: cannot connect to Redis: %w", store.ErrUnavailable, what, err)
	}
	return fmt.Errorf("%w: distributed: %s: %w", store.ErrUnavailable, what, err)
}

// dialCause returns why go-redis could not dial, when err is a deadline that passed while
// it kept trying: a dial that failed within the store's timeout and 2 s more (once all of
// its pool's dials have failed, go-redis stops dialing for calls and retries on its own
// once a second) with no dial succeeding since.
func (s *Store) dialCause(err error) error {
	if !errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return s.dials.cause(s.timeout + 2*time.Second)
}

// isDial reports the error of a dial: go-redis could not connect.
func isDial(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// badReply is the error of a script reply that does not follow the calling convention:
// Redis answered, so it concerns the call's key or script (see callFailed).
func badReply(what string, err error) error {
	return fmt.Errorf("%w: distributed: %s: %w", store.ErrKeyUnavailable, what, err)
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

// keyFault reports an error reply of Redis that concerns the call's key or script rather
// than the server: WRONGTYPE, a nil reply, or an error raised while the script ran ("ERR user_script:1:
// attempt to perform arithmetic on a nil value script: ...", "ERR value is not an integer
// ... script: ..."; before Redis 7, "ERR Error running script ..."). A script error that
// carries one of the server's own conditions (a write refused by a replica, out of memory;
// Redis 6 embeds those in "Error running script") is the server's. Every other error is
// the server's or the network's: an unknown reply is counted as an outage, as it always
// was, rather than hidden from the breaker.
func keyFault(err error) bool {
	if errors.Is(err, redis.Nil) { // the script returned nil: a reply, not an error of the server
		return true
	}
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := re.Error()
	code, _, _ := strings.Cut(msg, " ")
	switch code {
	case "WRONGTYPE":
		return true
	case "ERR":
		if !strings.Contains(msg, "script: ") && !strings.Contains(msg, "Error running script") &&
			!strings.Contains(msg, "@user_") {
			return false
		}
		for _, c := range serverConditions {
			if strings.Contains(msg, c) {
				return false
			}
		}
		return true
	}
	return false
}

// serverConditions are the error codes of Redis that describe the server, not a key: a
// script error that embeds one is an outage.
var serverConditions = []string{"LOADING ", "BUSY ", "READONLY ", "CLUSTERDOWN ", "MASTERDOWN ",
	"TRYAGAIN ", "OOM ", "NOREPLICAS ", "MISCONF ", "NOPERM ", "NOAUTH ", "max number of clients"}
