package distributed

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/luawire"
	"github.com/ratekit/limiter/internal/nilcheck"
	"github.com/ratekit/limiter/internal/resetmark"
	"github.com/ratekit/limiter/internal/storecheck"
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
	bounds  *deadlines   // nil when timeout is 0
	clock   clockx.Clock // nil: the server's TIME
	cc      *clientClock // nil: the server's TIME (see clock.go)
	closed  atomic.Bool
	batch   *batcher // nil with Batching{Off: true} or WithReplicaAck
	ack     *replicaAck
	guard   guard     // bounds each call by its deadline whatever the client's options
	dials   dialWatch // the client's last failed dial, to name it in errors

	// evalOnly sends every script with EVALSHA: set by the test hook, or once a server
	// answered that it has no functions (Redis before 7: FCALL is an unknown command).
	evalOnly atomic.Bool
	// noMulti stops the batches' groups (batch_multi.go) once a server refused one.
	noMulti atomic.Bool

	// scripts maps an algorithm's Name to its *scriptEntry, created once, so the SHA-1 of
	// a script is computed once per store rather than once per call.
	scripts sync.Map

	denials *denialCache // nil unless WithDenialCache
}

// configArgs is an algorithm config and the ARGV tail its AppendArgs produced.
type configArgs struct {
	a    algo.Algorithm
	tail []any
}

// algoPkg is the import path of package algo, whose configs are comparable structs whose
// AppendArgs depends on the config alone: those are the ones whose arguments are cached.
var algoPkg = reflect.TypeOf(algo.TokenBucket{}).PkgPath()

// config returns the config arguments of a, from the cache when a equals the algorithm
// cached last. Only configs of package algo are cached; comparing a with one of them never
// panics, since an interface comparison of different dynamic types is simply false and
// every config type of package algo is comparable.
func (e *scriptEntry) config(sa algo.Scripted, a algo.Algorithm) []any {
	if c := e.cfg.Load(); c != nil && c.a == a {
		return c.tail
	}
	tail := sa.AppendArgs(nil)
	if t := reflect.TypeOf(a); t.PkgPath() == algoPkg && t.Comparable() {
		e.cfg.Store(&configArgs{a: a, tail: tail})
	}
	return tail
}

// callBuf holds the KEYS and ARGV slices of one call. The transport copies both into its
// call (see exec), so they are recycled through bufPool once exec returns.
type callBuf struct {
	keys []string
	args []any
}

var bufPool = sync.Pool{New: func() any { return &callBuf{keys: make([]string, 0, 2), args: make([]any, 0, 8)} }}

func getBuf() *callBuf { return bufPool.Get().(*callBuf) }

func putBuf(b *callBuf) {
	clear(b.keys)
	clear(b.args)
	b.keys, b.args = b.keys[:0], b.args[:0]
	bufPool.Put(b)
}

// New returns a Store that runs its scripts on client: a *redis.Client, a
// *redis.ClusterClient, a failover client or a Ring. The Store does not own the client:
// Close leaves it open, and the caller closes it after the Store (and anything else
// using it) is done. Nil options are skipped. A nil client (also a nil *redis.Client) or
// an option with a value it cannot use (see each option) makes New return an error
// wrapping algo.ErrInvalidConfig that names it, and no Store.
func New(client redis.UniversalClient, opts ...Option) (*Store, error) {
	if nilcheck.Nil(client) {
		return nil, fmt.Errorf("%w: distributed.New: the client is nil", algo.ErrInvalidConfig)
	}
	o := options{prefix: defaultPrefix, timeout: defaultTimeout, tol: defaultClockTolerance, real: time.Now}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	if o.err != nil {
		return nil, o.err
	}
	s := &Store{client: client, prefix: o.prefix, timeout: o.timeout, clock: o.clock, ack: o.ack}
	if o.timeout > 0 {
		s.bounds = newDeadlines(o.timeout)
	}
	if o.clock != nil {
		s.cc = newClientClock(o.clock, o.tol, o.real)
	}
	s.evalOnly.Store(o.evalOnly)
	s.guard.init(client)
	watchDials(client, &s.dials)
	if o.denials != nil {
		s.denials = newDenialCache(*o.denials, o.clock)
	}
	if !o.batching.Off && o.ack == nil {
		s.batch = newBatcher(s, o.batching)
	}
	return s, nil
}

// Apply answers req for key under a, atomically in Redis, at the server's time (or at the
// time of the clock given with WithClientClock). It takes one round trip, two when the server has
// lost the script (restart, failover, SCRIPT FLUSH) and it is loaded again; with
// batching (the default, see WithBatching), concurrent calls share their round trips.
//
// Errors: bad input wraps store.ErrInvalidKey, algo.ErrInvalidConfig (also for an algorithm
// without a Lua twin) or algo.ErrInvalidRequest; after Close, store.ErrClosed; anything that
// kept the decision from being made (network, the store's timeout, cluster down, a key
// holding another type of data, a reply that does not parse) wraps store.ErrUnavailable,
// and also the underlying error (a context error, a redis.Error). When ctx is done, before
// the call or while it waits for Redis, the error is ctx's (context.Canceled or
// context.DeadlineExceeded) and does not wrap store.ErrUnavailable: see store.Store.
func (s *Store) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	if err := s.check(ctx, key, a, req); err != nil {
		return algo.Decision{}, err
	}
	if s.denials != nil && cacheable(a) {
		if req.Charge {
			return s.chargeCached(ctx, key, a, req)
		}
		return s.applyCached(ctx, key, a, req) // see denial_cache.go
	}
	return s.applyScript(ctx, key, a, req)
}

// check is what Apply, Refund and Peek check before anything is sent: the arguments, then
// Close, then the caller's context (a caller that gave up sends nothing).
func (s *Store) check(ctx context.Context, key string, a algo.Algorithm, req algo.Request) error {
	return storecheck.Call(ctx, key, a, req, s.closed.Load())
}

// applyScript is Apply's round trip, once the arguments are checked.
func (s *Store) applyScript(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	if req.Charge {
		return s.decide(ctx, "charge", "charge", key, a, req, luawire.Charge)
	}
	return s.decide(ctx, "apply", "script", key, a, req, luawire.Apply)
}

// decide runs a's script on key with the arguments encode builds (an apply or a peek)
// and parses its Decision; op and what name the call in its errors.
func (s *Store) decide(ctx context.Context, op, what, key string, a algo.Algorithm, req algo.Request,
	encode func(dst []any, now, n int64, maxWait time.Duration, config []any) []any) (algo.Decision, error) {
	sa, e, slot, err := s.script(a)
	if err != nil {
		return algo.Decision{}, err
	}
	now, nowArg, err := s.now(e.pads)
	if err != nil {
		return algo.Decision{}, err
	}
	b := getBuf()
	b.keys = appendStateKeys(b.keys, s.prefix, key, slot, e.def.Keys)
	b.args = encode(b.args, now, req.N, req.MaxWait, e.config(sa, a))
	b.args[1] = nowArg // ARGV[2], with the TTL padding of a client clock (see clock.go)
	reply, err := s.exec(ctx, e, b.keys, b.args)
	defer putBuf(b)
	if err != nil {
		return algo.Decision{}, s.fail(ctx, op, key, b.keys, a, err)
	}
	d, err := luawire.ParseDecision(reply)
	if err != nil {
		return algo.Decision{}, badReply(fmt.Sprintf("%s %s on key %s", a.Name(), what, quoteKey(key)), err)
	}
	if err := s.finished(now); err != nil {
		return algo.Decision{}, err
	}
	return algo.Decision(d), nil
}

// Refund gives back n permits of the grant of key under a identified by at (its
// Decision.At), as far as the algorithm allows. Its errors are those of Apply.
func (s *Store) Refund(ctx context.Context, key string, a algo.Algorithm, n int64, at int64) error {
	if err := s.check(ctx, key, a, algo.Request{N: n}); err != nil {
		return err
	}
	if s.denials != nil { // a refund may shorten a denial: see denial_cache.go
		s.denials.forget(key, a.Slot())
		defer s.denials.forget(key, a.Slot())
	}
	sa, e, slot, err := s.script(a)
	if err != nil {
		return err
	}
	now, nowArg, err := s.now(e.pads)
	if err != nil {
		return err
	}
	b := getBuf()
	b.keys = appendStateKeys(b.keys, s.prefix, key, slot, e.def.Keys)
	b.args = luawire.Refund(b.args, now, n, at, e.config(sa, a))
	b.args[1] = nowArg
	reply, err := s.exec(ctx, e, b.keys, b.args)
	defer putBuf(b)
	if err != nil {
		return s.fail(ctx, "refund", key, b.keys, a, err)
	}
	if err := luawire.ParseRefund(reply); err != nil {
		return badReply(fmt.Sprintf("%s refund on key %s", a.Name(), quoteKey(key)), err)
	}
	return nil
}

// Close marks the store closed: later calls return store.ErrClosed. It does not close the
// Redis client, which belongs to the caller. Close is idempotent and always returns nil.
//
// Calls queued for a pipeline before Close (see WithBatching) are still sent and
// answered: Close returns once they have been, so it may wait up to about WithTimeout per
// pipeline still to go (it does not wait for callers that gave up on their context), and
// once the store's flusher goroutines have exited.
func (s *Store) Close() error {
	s.closed.Store(true)
	if s.batch != nil {
		s.batch.close()
	}
	return nil
}

// markLike reports whether a key <prefix>{<key>}:<slot><suffix>, for one of suffixes,
// ends in resetmark.Suffix: it would be the Reset mark of the state whose slot is the rest
// (see Reset), which a custom algorithm's slot or script keys could otherwise name. It
// allocates nothing: every call checks it.
func markLike(slot string, suffixes []string) bool {
	const m = resetmark.Suffix
	for _, s := range suffixes {
		if k := len(m) - len(s); k <= 0 {
			if strings.HasSuffix(s, m) {
				return true
			}
		} else if s == m[k:] && strings.HasSuffix(slot, m[:k]) {
			return true
		}
	}
	return false
}

// script returns a's Lua twin, its transport entry, created once per name, and a's slot,
// which the caller's state keys are named by (checked: see checked).
func (s *Store) script(a algo.Algorithm) (algo.Scripted, *scriptEntry, string, error) {
	sa, ok := a.(algo.Scripted)
	if !ok {
		return nil, nil, "", fmt.Errorf("%w: %s (%T) has no Lua script, so the Redis store cannot run it",
			algo.ErrInvalidConfig, a.Name(), a)
	}
	def := sa.Script()
	if def == nil || def.Source == "" || len(def.Keys) == 0 {
		return nil, nil, "", fmt.Errorf("%w: %s (%T) returned an empty Script", algo.ErrInvalidConfig, a.Name(), a)
	}
	name := a.Name()
	if v, ok := s.scripts.Load(name); ok {
		e := v.(*scriptEntry)
		if e.def == def || e.def.Source == def.Source {
			return checked(sa, e, a)
		}
		return nil, nil, "", fmt.Errorf("%w: two algorithms named %q have different scripts (%T)",
			algo.ErrInvalidConfig, name, a)
	}
	v, _ := s.scripts.LoadOrStore(name, newEntry(def, formRate))
	e := v.(*scriptEntry)
	if e.def != def && e.def.Source != def.Source {
		return nil, nil, "", fmt.Errorf("%w: two algorithms named %q have different scripts (%T)",
			algo.ErrInvalidConfig, name, a)
	}
	return checked(sa, e, a)
}

// checked returns sa, e and a's slot unless a state key of a (its slot followed by one of
// its script's keys) would be the Reset mark of another state: that it reports, wrapping
// algo.ErrInvalidConfig.
func checked(sa algo.Scripted, e *scriptEntry, a algo.Algorithm) (algo.Scripted, *scriptEntry, string, error) {
	slot := a.Slot()
	if markLike(slot, e.def.Keys) {
		return nil, nil, "", fmt.Errorf("%w: %s (%T): a key of its state, slot %q followed by one of %q, ends in %q, "+
			"the suffix of the marks that Reset leaves beside every state", algo.ErrInvalidConfig, a.Name(), a, slot, e.def.Keys, resetmark.Suffix)
	}
	return sa, e, slot, nil
}
