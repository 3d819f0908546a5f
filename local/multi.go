package local

import (
	"context"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
)

var _ store.MultiApplier = (*Store)(nil)

// ApplyAll answers req for key under every rule at one instant, all or nothing: the grants
// are kept only when every rule grants. See store.MultiApplier.
//
// Every state of one key lives in one shard, so the call holds that shard's lock once. Each
// rule is applied to a copy of its state (algo.CloneState); the copies replace the states
// only when every rule granted, so a denial leaves every state exactly as it was. A rule
// whose state cannot be copied (a custom algorithm whose state does not implement
// algo.StateCloner) is applied in place and, on a denial, refunded under the same lock:
// no other call can see the grant, but the refund restores only what the algorithm's
// Refund restores.
func (s *Store) ApplyAll(_ context.Context, key string, rules []algo.Algorithm, req algo.Request) ([]algo.Decision, bool, error) {
	if err := store.CheckAll(key, rules, req); err != nil {
		return nil, false, err
	}
	if s.closed.Load() {
		return nil, false, store.ErrClosed
	}
	ds := make([]algo.Decision, len(rules))
	entries := make([]*entry, len(rules))
	states := make([]algo.State, len(rules)) // the copies the rules were applied to
	added := make([]bool, len(rules))

	h, sh := s.locate(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.now()
	for i, a := range rules {
		slot := a.Slot()
		if e := sh.find(h, key, slot); e != nil {
			if e.fresh <= now {
				revive(e, a, now)
			}
			entries[i] = e
			continue
		}
		entries[i], added[i] = s.insert(sh, h, key, slot, a, now), true
		entries[i].fresh = now
	}
	// Making room for one rule's new entry may have evicted another rule's entry of this
	// call: put it back. The shard may then hold a few more keys than its bound, until the
	// next sweep.
	for _, e := range entries {
		if sh.find(h, key, e.slot) == nil {
			sh.add(h, e)
		}
	}

	ok, cloned := true, true
	for i, e := range entries {
		if states[i] = algo.CloneState(e.state); states[i] == nil {
			cloned = false
			break
		}
	}
	if !cloned {
		return s.applyInPlace(rules, entries, ds, now, req)
	}
	for i, a := range rules {
		ds[i] = a.Apply(states[i], now, req)
		ok = ok && ds[i].Allowed
	}
	for i, e := range entries {
		switch {
		case ok:
			e.state = states[i]
			e.fresh = freshAt(now, ds[i])
			e.cfg = rules[i]
		case !ds[i].Allowed && !added[i]:
			// A denial is computed on the untouched state, which keeps its expiry.
			e.fresh = nextFresh(e.fresh, now, ds[i])
		}
		// A rule that granted in a denied call keeps its state and its old freshness; a new
		// entry stays fresh (a fresh state), for the sweeper to remove.
	}
	return ds, ok, nil
}

// applyInPlace is ApplyAll for states that cannot be copied: apply each rule in place and,
// if one denies, refund the rules that granted. It is called with the shard's lock held.
func (s *Store) applyInPlace(rules []algo.Algorithm, entries []*entry, ds []algo.Decision, now int64, req algo.Request) ([]algo.Decision, bool, error) {
	ok := true
	for i, a := range rules {
		ds[i] = a.Apply(entries[i].state, now, req)
		ok = ok && ds[i].Allowed
	}
	for i, a := range rules {
		e := entries[i]
		if !ok && ds[i].Allowed {
			a.Refund(e.state, now, req.N, ds[i].At)
		}
		// The freshness of a refunded state is not known; keeping the grant's is safe
		// (later than needed, never earlier).
		e.fresh = max(e.fresh, freshAt(now, ds[i]))
		if ds[i].Allowed {
			e.cfg = a
		}
	}
	return ds, ok, nil
}
