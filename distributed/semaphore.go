package distributed

import (
	"context"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/luawire"
	"github.com/ratekit/limiter/internal/storecheck"
	"github.com/ratekit/limiter/store"
)

var _ store.SemaphoreStore = (*Store)(nil)

// semSlot names a semaphore's keys beside the rate-limit states of the same name: a
// semaphore name lives at <prefix>{<escaped name>}:sem (its holders) and :sem:q, :sem:qe,
// :sem:n (its fair queue, the queue places' expiries, the ticket counter). No algorithm's
// Slot is "sem", so the two never collide; all four keys share the name's hash tag.
const semSlot = "sem"

// semEntry runs algo.Semaphore's Lua twin through the transport; one script serves every
// operation.
var semEntry = newEntry(algo.Semaphore{}.Script(), formLibrary)

// Acquire tries once to grant token a permit of the semaphore name, atomically in Redis at
// the server's time (or WithClientClock's). See store.SemaphoreStore for the rules; the
// script removes expired leases and queue places from the very keys it then counts, so a
// crashed holder or waiter frees its permit or place by itself.
func (s *Store) Acquire(ctx context.Context, name string, cfg algo.Semaphore, token string, queueTTL time.Duration) (algo.SemaphoreResult, error) {
	if err := storecheck.Semaphore(name, cfg, token); err != nil {
		return algo.SemaphoreResult{}, err
	}
	reply, err := s.semRun(ctx, "acquire", name, token, semQueueMicros(queueTTL), cfg)
	if err != nil {
		return algo.SemaphoreResult{}, err
	}
	vals, ok := reply.([]any)
	ok = ok && len(vals) == 4
	var n [4]int64
	for i := 0; ok && i < len(n); i++ {
		n[i], ok = vals[i].(int64)
		ok = ok && n[i] >= 0
	}
	if !ok || n[0] > 1 {
		return algo.SemaphoreResult{}, semBadReply("acquire", name, reply, "want 4 integers ≥ 0, the first 0 or 1")
	}
	retry := algo.Never // MaxMicros and beyond, as in an "apply" reply (luawire.Duration)
	if n[3] < algo.MaxMicros {
		retry = time.Duration(n[3]) * time.Microsecond
	}
	return algo.SemaphoreResult{Acquired: n[0] == 1, Holders: n[1], Position: n[2], RetryAfter: retry}, nil
}

// Release gives back token's permit of the semaphore name and removes token from its fair
// queue, reporting whether token held a live lease. See store.SemaphoreStore.
func (s *Store) Release(ctx context.Context, name, token string) (bool, error) {
	if err := storecheck.SemaphoreName(name); err != nil {
		return false, err
	}
	if err := storecheck.SemaphoreToken(token); err != nil {
		return false, err
	}
	return s.semBool(ctx, "release", name, token, algo.Semaphore{})
}

// Renew extends token's live lease of the semaphore name to now + cfg.LeaseTTL, reporting
// false when token holds no live lease. See store.SemaphoreStore.
func (s *Store) Renew(ctx context.Context, name string, cfg algo.Semaphore, token string) (bool, error) {
	if err := storecheck.Semaphore(name, cfg, token); err != nil {
		return false, err
	}
	return s.semBool(ctx, "renew", name, token, cfg)
}

// Holders returns the number of live leases of the semaphore name (forgetting, like every
// operation, the leases and queue places that have expired).
func (s *Store) Holders(ctx context.Context, name string) (int64, error) {
	if err := storecheck.SemaphoreName(name); err != nil {
		return 0, err
	}
	reply, err := s.semRun(ctx, "holders", name, "", 0, algo.Semaphore{})
	if err != nil {
		return 0, err
	}
	n, ok := reply.(int64)
	if !ok || n < 0 {
		return 0, semBadReply("holders", name, reply, "want an integer ≥ 0")
	}
	return n, nil
}

// semBool runs an operation that replies 0 or 1.
func (s *Store) semBool(ctx context.Context, op, name, token string, cfg algo.Semaphore) (bool, error) {
	reply, err := s.semRun(ctx, op, name, token, 0, cfg)
	if err != nil {
		return false, err
	}
	n, ok := reply.(int64)
	if !ok || (n != 0 && n != 1) {
		return false, semBadReply(op, name, reply, "want 0 or 1")
	}
	return n == 1, nil
}

// semRun runs the semaphore script for op on name's keys, with ARGV as documented on
// algo.Semaphore.Script, and wraps a failure with store.ErrUnavailable; once ctx is done,
// it returns ctx's error instead (see store.SemaphoreStore).
func (s *Store) semRun(ctx context.Context, op, name, token string, queue int64, cfg algo.Semaphore) (any, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if err := storecheck.Context(ctx); err != nil {
		return nil, err // the caller gave up: nothing is sent
	}
	now, nowArg, err := s.now(true) // semaphore.lua pads
	if err != nil {
		return nil, err
	}
	keys := stateKeys(s.prefix, name, semSlot, cfg.Script().Keys)
	args := cfg.AppendArgs(append(make([]any, 0, 7), op, nowArg, token, queue))
	reply, err := s.exec(ctx, semEntry, keys, args)
	if err != nil {
		return nil, s.callFailed(ctx, semCall(op, name), keys, err)
	}
	if op != "release" { // a release gives back; the others grant or count (see clock.go)
		if err := s.finished(now); err != nil {
			return nil, err
		}
	}
	return reply, nil
}

// semCall names a semaphore call for an error message.
func semCall(op, name string) string { return "semaphore " + op + " on " + quoteKey(name) }

// semBadReply is the error of a reply that does not follow the script's convention
// (algo.Semaphore.Script): want says what it should have been.
func semBadReply(op, name string, reply any, want string) error {
	return badReply(semCall(op, name), &luawire.ReplyError{Reply: reply, Problem: want})
}

// semQueueMicros converts a queue TTL to whole µs, clamped to [0, algo.MaxMicros].
func semQueueMicros(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return min(int64(d/time.Microsecond), algo.MaxMicros)
}
