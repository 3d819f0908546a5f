package local

import (
	"context"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/storecheck"
	"github.com/ratekit/limiter/store"
)

var _ store.MultiApplier = (*Store)(nil)

// ApplyAll answers req for key under every rule at one instant, all or nothing: the grants
// are kept only when every rule grants. See store.MultiApplier.
//
// Every state of one key lives in one shard, so the call holds that shard's lock once. Each
// rule is applied to a copy of its state (cloneState); the copies replace the states
// only when every rule granted, so a denial leaves every state exactly as it was. A rule
// whose state cannot be copied (a custom algorithm whose state does not implement
// algo.StateCloner) is applied in place and, on a denial, refunded under the same lock:
// no other call can see the grant, but the refund restores only what the algorithm's
// Refund restores.
func (s *Store) ApplyAll(ctx context.Context, key string, rules []algo.Algorithm, req algo.Request) ([]algo.Decision, bool, error) {
	if err := storecheck.ApplyAll(key, rules, req); err != nil {
		return nil, false, err
	}
	if s.closed.Load() {
		return nil, false, store.ErrClosed
	}
	if err := storecheck.Context(ctx); err != nil {
		return nil, false, err
	}
	ds := make([]algo.Decision, len(rules))
	entries := make([]*entry, len(rules))
	states := make([]algo.State, len(rules)) // the copies the rules were applied to
	added := make([]bool, len(rules))
	var short []int64 // per rule, insert's soon when it found no room (else 0); nil if none

	h, sh := s.locate(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.now()
	// Every entry is held under its own lock too until the end, as Apply may decide on an
	// existing entry under that lock alone.
	defer func() {
		for _, e := range entries {
			if e != nil {
				e.mu.Unlock()
			}
		}
	}()
	for i, a := range rules {
		slot := a.Slot()
		if e := sh.find(h, key, slot); e != nil {
			e.mu.Lock()
			if e.fresh <= now {
				revive(e, a, now)
			}
			entries[i] = e
			continue
		}
		e, soon := s.insert(sh, h, key, slot, a, now)
		if e == nil {
			// No room for this rule's state (see insert): the rule is denied, so the call
			// is. A throw-away fresh state stands in for it, for its Limit.
			if short == nil {
				short = make([]int64, len(rules))
			}
			short[i] = soon
			e = &entry{key: key, state: a.NewState()}
		}
		e.mu.Lock()
		entries[i], added[i] = e, !e.overflow()
	}
	ok, cloned := true, true
	for i, e := range entries {
		if states[i] = cloneState(e.state); states[i] == nil {
			cloned = false
			break
		}
	}
	if !cloned {
		return sh.applyInPlace(rules, entries, short, ds, now, req)
	}
	for i, a := range rules {
		ds[i] = a.Apply(states[i], now, req)
		if short != nil && short[i] != 0 {
			ds[i] = fullDenial(ds[i], now, short[i])
		}
		ok = ok && ds[i].Allowed
	}
	for i, e := range entries {
		switch {
		case ok:
			e.state = states[i]
			e.fresh = freshAt(now, ds[i])
			sh.wrote(e, rules[i])
		case !ds[i].Allowed && !added[i]:
			// A denial is computed on the untouched state, which keeps its expiry.
			e.fresh = nextFresh(e.fresh, now, ds[i])
		}
		// A rule that granted in a denied call keeps its state and its old freshness; a new
		// entry keeps the freshness insert gave it (now for a fresh state, for the sweeper to
		// remove).
	}
	return ds, ok, nil
}

// applyInPlace is ApplyAll for states that cannot be copied: apply each rule in place and,
// if one denies, refund the rules that granted. short is ApplyAll's. It is called with the shard's lock held.
func (sh *shard) applyInPlace(rules []algo.Algorithm, entries []*entry, short []int64, ds []algo.Decision, now int64, req algo.Request) ([]algo.Decision, bool, error) {
	ok := true
	for i, a := range rules {
		ds[i] = a.Apply(entries[i].state, now, req)
		if short != nil && short[i] != 0 {
			ds[i] = fullDenial(ds[i], now, short[i])
		}
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
			sh.wrote(e, a)
		}
	}
	return ds, ok, nil
}

// cloneState returns a deep copy of st when st copies itself (algo.StateCloner, as the
// states of package algo's algorithms do), else nil.
func cloneState(st algo.State) algo.State {
	if c, ok := st.(algo.StateCloner); ok {
		return c.CloneState()
	}
	return nil
}
