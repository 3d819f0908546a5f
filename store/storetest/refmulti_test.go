package storetest

import (
	"context"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/storecheck"
	"github.com/ratekit/limiter/store"
)

var _ store.MultiApplier = (*refStore)(nil)

// flawPartial makes ApplyAll keep the grants of the rules that granted when another one
// denied: not all or nothing.
const flawPartial = "partial"

// ApplyAll implements store.MultiApplier: every rule applied to a copy of its state at one
// instant, the copies kept only when every rule granted.
func (s *refStore) ApplyAll(ctx context.Context, key string, rules []algo.Algorithm, req algo.Request) ([]algo.Decision, bool, error) {
	if s.flaw != flawNoValidation {
		if err := storecheck.ApplyAll(key, rules, req); err != nil {
			return nil, false, err
		}
	}
	if err := storecheck.Context(ctx); err != nil && s.flaw != flawIgnoresCtx {
		return nil, false, err
	}
	unlock := s.lock()
	defer unlock()
	if s.closed {
		return nil, false, store.ErrClosed
	}
	now := s.clk.Now().UnixMicro()
	ds := make([]algo.Decision, len(rules))
	next := make([]algo.State, len(rules))
	ok := true
	for i, a := range rules {
		if a == nil {
			return nil, false, algo.ErrInvalidConfig
		}
		st, found := s.m[s.name(key, a)]
		if !found {
			st = a.NewState()
		}
		next[i] = st.(algo.StateCloner).CloneState()
		ds[i] = a.Apply(next[i], now, req)
		ok = ok && ds[i].Allowed
	}
	for i, a := range rules {
		if ok || s.flaw == flawPartial && ds[i].Allowed {
			s.m[s.name(key, a)] = next[i]
		}
	}
	return ds, ok, nil
}
