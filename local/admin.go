package local

import (
	"context"
	"fmt"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/resetmark"
	"github.com/ratekit/limiter/internal/storecheck"
	"github.com/ratekit/limiter/store"
)

var _ store.Admin = (*Store)(nil)

// Peek answers what Apply(ctx, key, a, req) would answer now (with what is available
// before the request as Remaining), without changing anything:
// it applies req to a copy of the state Apply would decide with (algo.Peek), under the
// shard's lock, and neither creates an entry nor moves its idle time. See store.Admin.
//
// The state Apply would decide with is the key's own, or a fresh one when it has none
// (or when its state expired under another config), or the shard's overflow state that
// a new key would start from (see WithMaxKeys). One case is answered more kindly than
// Apply would: a new key of a smooth algorithm on a shard full of keys still limiting,
// which Apply denies until room comes free, is peeked as if it found room.
//
// A custom state without algo.StateCloner can be peeked only while the key has none (a
// fresh state is applied and thrown away); otherwise Peek returns an error wrapping
// store.ErrUnsupported.
func (s *Store) Peek(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	if err := storecheck.Call(ctx, key, a, req, s.closed.Load()); err != nil {
		return algo.Decision{}, err
	}
	slot := a.Slot()
	h, sh := s.locate(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.now()
	// A nil state (a fresh one) is applied as a throw-away a.NewState(): no copy needed.
	e, st := sh.peekState(h, key, slot, a, now)
	if e != nil {
		defer e.mu.Unlock()
	}
	d, ok := algo.Peek(a, st, now, req)
	if !ok {
		return algo.Decision{}, fmt.Errorf("%w: local.Peek: %s's state (%T) cannot be copied (algo.StateCloner)",
			store.ErrUnsupported, a.Name(), st)
	}
	return d, nil
}

// peekState returns the state Apply would decide key with under slot at now, or nil for
// a fresh one; it changes nothing. It is called with sh.mu held, and returns with the lock
// of the key's entry e held when it has one (the caller releases it once done with the state).
func (sh *shard) peekState(h uint64, key, slot string, a algo.Algorithm, now int64) (*entry, algo.State) {
	if e := sh.find(h, key, slot); e != nil {
		e.mu.Lock()
		if e.fresh <= now && e.cfg != (config{}) && !is(e.cfg, a) && !carriesConfig(e.state) {
			return e, nil // revive would start it afresh
		}
		return e, e.state
	}
	if ov := sh.over[slot]; ov != nil && ov.fresh > now {
		return nil, ov.state // a new entry starts as a copy of it, or is decided by it
	}
	return nil, nil
}

// Reset forgets the state of key under each of rules: their entries are removed under the
// shard's lock, so the next Apply starts fresh, and each is marked (package
// internal/resetmark), so that Refund drops a grant acting before the Reset while the mark
// lasts; Sweep forgets the marks that have ended. See store.Admin.
//
// A key that has no entry of its own because it is decided by its shard's overflow state
// (see WithMaxKeys) stays so: that state is shared with other keys, so it is not reset,
// and while it limits, a new entry starts as a copy of it.
func (s *Store) Reset(ctx context.Context, key string, rules ...algo.Algorithm) error {
	if err := storecheck.Reset(key, rules); err != nil {
		return err
	}
	if s.closed.Load() {
		return store.ErrClosed
	}
	if err := storecheck.Context(ctx); err != nil {
		return err
	}
	h, sh := s.locate(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.now()
	for _, a := range rules {
		slot := a.Slot()
		if e := sh.find(h, key, slot); e != nil {
			sh.remove(h, slot, e)
		}
		// Marked whether or not it had an entry, as the Redis store marks every key it
		// deletes: an entry not yet swept may be fresh where Redis has expired its key.
		s.marks.put(key, slot, resetmark.New(a, now))
	}
	return nil
}
