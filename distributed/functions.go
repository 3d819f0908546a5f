package distributed

import (
	"context"
	"errors"
	"strings"

	"github.com/redis/go-redis/v9"
)

// The scripts of package algo also come as Redis 7 function libraries (algo.Script's
// Library): the prelude's helpers are defined once, when the library loads, instead of on
// every EVALSHA, which saves server time on every decision. A plain Apply, Refund or Peek
// sends FCALL; batching, WithReplicaAck, ApplyAll, Reset and the semaphore keep EVALSHA
// (their scripts have no library, or their calls are pipelines where the difference
// matters less than the extra reload paths would cost).
//
// No probe is sent ahead of the calls: the first FCALL is the probe. A server that does
// not have the library (never loaded, restarted, failed over to a replica that lacks it,
// FUNCTION FLUSH; on a Cluster each node has its own) answers "Function not found", and
// the store loads the library on the server that owns the key and calls again, as it
// re-sends a script after NOSCRIPT. A server without functions (Redis before 7, FCALL
// unknown) or a user the ACL does not allow them makes the store send EVALSHA from then
// on, for every call and every node.

// runFunction is run for a script with a library: FCALL under the same bounds.
func (s *Store) runFunction(ctx context.Context, e *scriptEntry, keys []string, args []any) (reply any, err error, left bool) {
	if s.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	if s.guard.inline {
		reply, err = s.fcall(ctx, e, keys, args)
		return reply, err, false
	}
	return s.guard.do(ctx, func(ctx context.Context) (any, error) {
		return s.fcall(ctx, e, keys, args)
	}, nil)
}

// fcall calls e's function, loading its library where it is missing, and falls back to
// EVALSHA for good on a server without functions.
func (s *Store) fcall(ctx context.Context, e *scriptEntry, keys []string, args []any) (any, error) {
	reply, err := s.client.FCall(ctx, e.def.Function, keys, args...).Result()
	switch {
	case err == nil:
		return reply, nil
	case isNoFunction(err):
		// The function did not run: load it where keys[0] lives and call again.
		if err := s.loadLibrary(ctx, e, keys[0]); err != nil {
			if !noFunctions(err) {
				return nil, err
			}
			s.evalOnly.Store(true)
			return e.run.Run(ctx, s.client, keys, args...).Result()
		}
		return s.client.FCall(ctx, e.def.Function, keys, args...).Result()
	case noFunctions(err):
		s.evalOnly.Store(true)
		return e.run.Run(ctx, s.client, keys, args...).Result()
	}
	return reply, err
}

// loadLibrary loads (or replaces: two callers may race to it) e's library on the server
// that owns key.
func (s *Store) loadLibrary(ctx context.Context, e *scriptEntry, key string) error {
	node, err := s.nodeFor(ctx, key)
	if err != nil {
		return err
	}
	return node.FunctionLoadReplace(ctx, e.def.Library).Err()
}

// isNoFunction reports the reply of FCALL for a function the server does not have.
func isNoFunction(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.Contains(re.Error(), "Function not found")
}

// noFunctions reports a server that cannot run functions for this client: FCALL or
// FUNCTION is an unknown command (Redis before 7, or renamed away), or the ACL denies it.
func noFunctions(err error) bool {
	var re redis.Error
	if !errors.As(err, &re) {
		return false
	}
	msg := strings.ToLower(err.Error())
	if strings.HasPrefix(msg, "err unknown command") {
		return strings.Contains(msg, "fcall") || strings.Contains(msg, "function")
	}
	return strings.HasPrefix(msg, "noperm") && (strings.Contains(msg, "fcall") || strings.Contains(msg, "function"))
}
