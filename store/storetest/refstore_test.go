package storetest

import (
	"context"
	"runtime"
	"sync"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/storecheck"
	"github.com/ratekit/limiter/store"
)

// refStore is the simplest correct Store: one map, one mutex, the algo transitions at the
// clock's now, no expiry. A flaw makes it wrong in one chosen way, to show the suite notices.
type refStore struct {
	clk    clockx.Clock
	flaw   string
	mu     sync.Mutex
	m      map[[2]string]algo.State
	closed bool
	calls  int
	logs   map[[2]string][]logged // flawRacy: the grants each state is rebuilt from
}

// logged is one granted request, replayed by the racy flaw to rebuild a snapshot.
type logged struct {
	now int64
	req algo.Request
}

var _ store.Store = (*refStore)(nil)

// Flaws refStore can have.
const (
	flawNone         = ""
	flawSharedKeys   = "shared-keys"   // every key shares one state
	flawSharedSlots  = "shared-slots"  // the slot is ignored: algorithms collide on a key
	flawNoClose      = "no-close"      // Close does nothing
	flawLostRefund   = "lost-refund"   // Refund does nothing
	flawForgetful    = "forgetful"     // every 50th call starts from a fresh state
	flawNoValidation = "no-validation" // Check is skipped
	flawRacy         = "racy"          // lost updates: decides on a snapshot, then overwrites
	flawIgnoresCtx   = "ignores-ctx"   // a done context is ignored: the call goes through
	flawPeekWrites   = "peek-writes"   // Peek commits what it answers, as Apply does
	flawResetNothing = "reset-nothing" // Reset forgets nothing
)

func newRefStore(clk clockx.Clock, flaw string) *refStore {
	return &refStore{clk: clk, flaw: flaw, m: map[[2]string]algo.State{}, logs: map[[2]string][]logged{}}
}

func (s *refStore) name(key string, a algo.Algorithm) [2]string {
	switch s.flaw {
	case flawSharedKeys:
		key = ""
	case flawSharedSlots:
		return [2]string{key, a.Name()}
	}
	return [2]string{key, a.Slot()}
}

func (s *refStore) lock() func() {
	s.mu.Lock()
	return s.mu.Unlock
}

// applyRacy decides on a snapshot rebuilt outside the lock and then stores its own log,
// overwriting whatever another caller committed meanwhile: the classic lost update.
func (s *refStore) applyRacy(k [2]string, a algo.Algorithm, req algo.Request) algo.Decision {
	s.mu.Lock()
	log := append([]logged(nil), s.logs[k]...)
	now := s.clk.Now().UnixMicro()
	s.mu.Unlock()
	st := a.NewState()
	for _, l := range log {
		a.Apply(st, l.now, l.req)
	}
	runtime.Gosched() // let other callers take the same snapshot
	d := a.Apply(st, now, req)
	if d.Allowed {
		s.mu.Lock()
		s.logs[k] = append(log, logged{now: now, req: req})
		s.mu.Unlock()
	}
	return d
}

// Apply implements store.Store.
func (s *refStore) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	if s.flaw != flawNoValidation {
		if err := storecheck.Apply(key, a, req); err != nil {
			return algo.Decision{}, err
		}
	}
	if err := storecheck.Context(ctx); err != nil && s.flaw != flawIgnoresCtx {
		return algo.Decision{}, err
	}
	if s.flaw == flawRacy {
		return s.applyRacy(s.name(key, a), a, req), nil
	}
	unlock := s.lock()
	defer unlock()
	if s.closed {
		return algo.Decision{}, store.ErrClosed
	}
	s.calls++
	k := s.name(key, a)
	st, ok := s.m[k]
	if !ok || (s.flaw == flawForgetful && s.calls%50 == 0) {
		st = a.NewState()
		s.m[k] = st
	}
	return a.Apply(st, s.clk.Now().UnixMicro(), req), nil
}

// Refund implements store.Store.
func (s *refStore) Refund(ctx context.Context, key string, a algo.Algorithm, n int64, at int64) error {
	if err := storecheck.Apply(key, a, algo.Request{N: n}); err != nil {
		return err
	}
	if err := storecheck.Context(ctx); err != nil && s.flaw != flawIgnoresCtx {
		return err
	}
	unlock := s.lock()
	defer unlock()
	if s.closed {
		return store.ErrClosed
	}
	if st, ok := s.m[s.name(key, a)]; ok && s.flaw != flawLostRefund {
		a.Refund(st, s.clk.Now().UnixMicro(), n, at)
	}
	return nil
}

// Close implements store.Store.
func (s *refStore) Close() error {
	unlock := s.lock()
	defer unlock()
	if s.flaw != flawNoClose {
		s.closed = true
	}
	return nil
}

var _ store.Admin = (*refStore)(nil)

// Peek implements store.Admin: Apply on a copy of the state.
func (s *refStore) Peek(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	if err := storecheck.Apply(key, a, req); err != nil {
		return algo.Decision{}, err
	}
	if err := storecheck.Context(ctx); err != nil {
		return algo.Decision{}, err
	}
	unlock := s.lock()
	defer unlock()
	if s.closed {
		return algo.Decision{}, store.ErrClosed
	}
	now := s.clk.Now().UnixMicro()
	st, ok := s.m[s.name(key, a)]
	if !ok {
		st = a.NewState()
	}
	if s.flaw == flawPeekWrites {
		s.m[s.name(key, a)] = st
		return a.Apply(st, now, req), nil
	}
	d, _ := algo.Peek(a, st, now, req)
	return d, nil
}

// Reset implements store.Admin.
func (s *refStore) Reset(ctx context.Context, key string, rules ...algo.Algorithm) error {
	if err := storecheck.Reset(key, rules); err != nil {
		return err
	}
	if err := storecheck.Context(ctx); err != nil {
		return err
	}
	unlock := s.lock()
	defer unlock()
	if s.closed {
		return store.ErrClosed
	}
	if s.flaw != flawResetNothing {
		for _, a := range rules {
			delete(s.m, s.name(key, a))
		}
	}
	return nil
}
