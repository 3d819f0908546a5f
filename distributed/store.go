package distributed

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/store"
)

var _ store.Store = (*Store)(nil)

// Store is a store.Store that keeps limiter state in Redis: every decision is one Lua
// script, run atomically by the server that owns the key, in one round trip. It is safe for
// concurrent use by any number of goroutines and processes sharing the Redis.
//
// The algorithms it accepts are those implementing algo.Scripted (every config of package
// algo). Create a Store with [New]; the zero value is not usable.
type Store struct {
	client  redis.UniversalClient
	prefix  string
	timeout time.Duration
	clock   clockx.Clock // nil: the server's TIME
	closed  atomic.Bool

	// scripts maps an algorithm's Name to its *scriptEntry, created once, so the SHA-1 of
	// a script is computed once per store rather than once per call.
	scripts sync.Map
}

// scriptEntry pairs an algorithm's Lua source with the go-redis Script that runs it.
type scriptEntry struct {
	def *algo.Script
	run *redis.Script
}

// New returns a Store that runs its scripts on client: a *redis.Client, a
// *redis.ClusterClient, a failover client or a Ring. The Store does not own the client:
// Close leaves it open, and the caller closes it after the Store (and anything else
// using it) is done.
func New(client redis.UniversalClient, opts ...Option) *Store {
	o := options{prefix: DefaultPrefix, timeout: DefaultTimeout}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	return &Store{client: client, prefix: o.prefix, timeout: o.timeout, clock: o.clock}
}

// Apply answers req for key under a, atomically in Redis, at the server's time (or at the
// time of the clock given with WithClock). It takes one round trip, two when the server has
// lost the script (restart, failover, SCRIPT FLUSH) and it is loaded again.
//
// Errors: bad input wraps store.ErrInvalidKey, algo.ErrInvalidConfig (also for an algorithm
// without a Lua twin) or algo.ErrInvalidRequest; after Close, store.ErrClosed; anything that
// kept the decision from being made (network, timeout, cluster down, a key holding
// another type of data, a reply that does not parse) wraps store.ErrUnavailable, and also
// the underlying error (a context error, a redis.Error).
func (s *Store) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	if err := store.Check(key, a, req); err != nil {
		return algo.Decision{}, err
	}
	if s.closed.Load() {
		return algo.Decision{}, store.ErrClosed
	}
	sa, e, err := s.script(a)
	if err != nil {
		return algo.Decision{}, err
	}
	keys := stateKeys(s.prefix, key, a.Slot(), e.def.Keys)
	args := s.args("apply", req.N, maxWaitMicros(req.MaxWait), sa)
	reply, err := s.run(ctx, e.run, keys, args)
	if err != nil {
		return algo.Decision{}, s.fail("apply", key, keys, a, err)
	}
	d, err := parseDecision(reply)
	if err != nil {
		return algo.Decision{}, fmt.Errorf("%w: distributed: %s script on key %s: %w",
			store.ErrUnavailable, a.Name(), quoteKey(key), err)
	}
	return d, nil
}

// Refund gives back n permits of the grant of key under a identified by at (its
// Decision.At), as far as the algorithm allows. Its errors are those of Apply.
func (s *Store) Refund(ctx context.Context, key string, a algo.Algorithm, n int64, at int64) error {
	if err := store.Check(key, a, algo.Request{N: n}); err != nil {
		return err
	}
	if s.closed.Load() {
		return store.ErrClosed
	}
	sa, e, err := s.script(a)
	if err != nil {
		return err
	}
	keys := stateKeys(s.prefix, key, a.Slot(), e.def.Keys)
	reply, err := s.run(ctx, e.run, keys, s.args("refund", n, at, sa))
	if err != nil {
		return s.fail("refund", key, keys, a, err)
	}
	if _, ok := reply.(int64); !ok {
		return fmt.Errorf("%w: distributed: %s refund on key %s replied %s, want an integer",
			store.ErrUnavailable, a.Name(), quoteKey(key), describe(reply))
	}
	return nil
}

// Close marks the store closed: later calls return store.ErrClosed. It does not close the
// Redis client, which belongs to the caller. Close is idempotent and always returns nil.
func (s *Store) Close() error {
	s.closed.Store(true)
	return nil
}

// script returns a's Lua twin and its go-redis Script, creating the latter once per name.
func (s *Store) script(a algo.Algorithm) (algo.Scripted, *scriptEntry, error) {
	sa, ok := a.(algo.Scripted)
	if !ok {
		return nil, nil, fmt.Errorf("%w: %s (%T) has no Lua script, so the Redis store cannot run it",
			algo.ErrInvalidConfig, a.Name(), a)
	}
	def := sa.Script()
	if def == nil || def.Source == "" || len(def.Keys) == 0 {
		return nil, nil, fmt.Errorf("%w: %s (%T) returned an empty Script", algo.ErrInvalidConfig, a.Name(), a)
	}
	name := a.Name()
	if v, ok := s.scripts.Load(name); ok {
		e := v.(*scriptEntry)
		if e.def == def || e.def.Source == def.Source {
			return sa, e, nil
		}
		return nil, nil, fmt.Errorf("%w: two algorithms named %q have different scripts (%T)",
			algo.ErrInvalidConfig, name, a)
	}
	v, _ := s.scripts.LoadOrStore(name, &scriptEntry{def: def, run: redis.NewScript(def.Source)})
	e := v.(*scriptEntry)
	if e.def != def && e.def.Source != def.Source {
		return nil, nil, fmt.Errorf("%w: two algorithms named %q have different scripts (%T)",
			algo.ErrInvalidConfig, name, a)
	}
	return sa, e, nil
}

// args builds ARGV: op, now ("" for the server's TIME), n, the fourth argument, the config.
func (s *Store) args(op string, n, fourth int64, sa algo.Scripted) []any {
	args := make([]any, 4, 10)
	args[0] = op
	if s.clock != nil {
		args[1] = clockx.Micros(s.clock.Now())
	} else {
		args[1] = ""
	}
	args[2] = n
	args[3] = fourth
	return sa.AppendArgs(args)
}

// run executes the script with EVALSHA, falling back to EVAL (which also caches the script
// on that server) when the server answers NOSCRIPT.
func (s *Store) run(ctx context.Context, sc *redis.Script, keys []string, args []any) (any, error) {
	if s.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.timeout)
		defer cancel()
	}
	return sc.Run(ctx, s.client, keys, args...).Result()
}

// maxWaitMicros converts MaxWait to whole µs as the algorithms do: rounded down, ≤ 0 is 0,
// Forever (and anything beyond MaxMicros) is MaxMicros.
func maxWaitMicros(d time.Duration) int64 {
	switch {
	case d <= 0:
		return 0
	case d == algo.Forever || d/time.Microsecond >= time.Duration(algo.MaxMicros):
		return algo.MaxMicros
	default:
		return int64(d / time.Microsecond)
	}
}
