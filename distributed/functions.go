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
	case isNoFunction(err): // the function did not run
		return s.loadAndCall(ctx, e, keys, args)
	case noFunctions(err):
		s.evalOnly.Store(true)
		return e.run.Run(ctx, s.client, keys, args...).Result()
	}
	return reply, err
}

// loadAndCall loads (or replaces: two callers may race to it) e's library on the server
// that owns keys[0] and calls the function there, both in one pipeline: one round trip,
// as EVAL after NOSCRIPT. A server that turns out to have no functions gets EVALSHA.
func (s *Store) loadAndCall(ctx context.Context, e *scriptEntry, keys []string, args []any) (any, error) {
	node, err := s.nodeFor(ctx, keys[0])
	if err != nil {
		return nil, err
	}
	pipe := node.Pipeline()
	load := pipe.FunctionLoadReplace(ctx, e.def.Library)
	call := pipe.FCall(ctx, e.def.Function, keys, args...)
	_, _ = pipe.Exec(ctx) // each command's outcome is read below
	if err := load.Err(); err != nil {
		if noFunctions(err) {
			s.evalOnly.Store(true)
			return e.run.Run(ctx, s.client, keys, args...).Result()
		}
		return nil, err
	}
	reply, err := call.Result()
	if isRedirect(err) {
		// The slot moved between nodeFor and the call (a resharding): the library is
		// loaded on the old owner only, so the call goes through the client again, which
		// follows the redirection (and loads the library there if need be).
		return s.fcallRedirected(ctx, e, keys, args)
	}
	return reply, err
}

// fcallRedirected is fcall after a redirection: at most one more load, no further
// redirection handling of its own (go-redis follows MOVED and ASK for s.client).
func (s *Store) fcallRedirected(ctx context.Context, e *scriptEntry, keys []string, args []any) (any, error) {
	reply, err := s.client.FCall(ctx, e.def.Function, keys, args...).Result()
	if isNoFunction(err) {
		node, nerr := s.nodeFor(ctx, keys[0])
		if nerr != nil {
			return nil, nerr
		}
		if err := node.FunctionLoadReplace(ctx, e.def.Library).Err(); err != nil {
			return nil, err
		}
		return s.client.FCall(ctx, e.def.Function, keys, args...).Result()
	}
	return reply, err
}

// isRedirect reports a Cluster redirection, MOVED or ASK.
func isRedirect(err error) bool {
	return redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK")
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
