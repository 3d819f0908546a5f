package local

import (
	"context"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/semstate"
	"github.com/ratekit/limiter/internal/storecheck"
	"github.com/ratekit/limiter/store"
)

var _ store.SemaphoreStore = (*Store)(nil)

// semSlot is the slot under which a semaphore's state sits beside the rate-limit states of
// the same name. No algorithm's Slot starts with a NUL byte, so the two never collide.
const semSlot = "\x00semaphore"

// Acquire tries once to grant token a permit of the semaphore name, at the store's now.
// See store.SemaphoreStore for the rules (the local store runs them as internal/semstate).
func (s *Store) Acquire(ctx context.Context, name string, cfg algo.Semaphore, token string, queueTTL time.Duration) (algo.SemaphoreResult, error) {
	if err := storecheck.Semaphore(name, cfg, token); err != nil {
		return algo.SemaphoreResult{}, err
	}
	var r algo.SemaphoreResult
	err := s.semaphore(ctx, name, true, func(st *semstate.State, now int64) {
		r = st.Acquire(cfg, now, token, queueTTL)
	})
	return r, err
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
	var ok bool
	err := s.semaphore(ctx, name, false, func(st *semstate.State, now int64) {
		ok = st.Release(now, token)
	})
	return ok, err
}

// Renew extends token's live lease of the semaphore name to now + cfg.LeaseTTL, reporting
// false when token holds no live lease. See store.SemaphoreStore.
func (s *Store) Renew(ctx context.Context, name string, cfg algo.Semaphore, token string) (bool, error) {
	if err := storecheck.Semaphore(name, cfg, token); err != nil {
		return false, err
	}
	var ok bool
	err := s.semaphore(ctx, name, false, func(st *semstate.State, now int64) {
		ok = st.Renew(cfg, now, token)
	})
	return ok, err
}

// Holders returns the number of live leases of the semaphore name.
func (s *Store) Holders(ctx context.Context, name string) (int64, error) {
	if err := storecheck.SemaphoreName(name); err != nil {
		return 0, err
	}
	var n int64
	err := s.semaphore(ctx, name, false, func(st *semstate.State, now int64) {
		n = st.Holders(now)
	})
	return n, err
}

// semaphore runs f on the state of the semaphore name under its shard's lock, creating the
// state first when create is set; without it, a missing state skips f, whose results then
// keep their zero values, the answers of a fresh semaphore (Release, Renew: false;
// Holders: 0); when ctx is done, f is skipped and ctx's error returned. The entry's fresh
// instant is the state's IdleAt, so the sweeper forgets a semaphore once its
// last lease and queue place have expired, and a semaphore left empty is removed at once.
//
// A new semaphore is inserted without evicting other keys to make room (WithMaxKeys), and
// the eviction in sweep.go, which removes only idle entries, never picks a semaphore with a
// live lease: holders must never be forgotten while their leases run, or more than Permits
// could hold at once. Semaphores leave only when idle.
func (s *Store) semaphore(ctx context.Context, name string, create bool, f func(st *semstate.State, now int64)) error {
	if s.closed.Load() {
		return store.ErrClosed
	}
	if err := storecheck.Context(ctx); err != nil {
		return err // a done context changes nothing (see store.SemaphoreStore)
	}
	h, sh := s.locate(name)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	now := s.now()
	e := sh.find(h, name, semSlot)
	st := semState(e)
	if st == nil {
		if !create {
			return nil // the zero answers (false, 0) are those of a fresh semaphore
		}
		st = semstate.New()
		e = &entry{key: name, state: st}
		sh.add(h, semSlot, e)
	}
	f(st, now)
	if idle := st.IdleAt(); idle == 0 {
		sh.remove(h, semSlot, e)
	} else {
		e.mu.Lock()
		e.fresh = idle
		e.mu.Unlock()
	}
	return nil
}

// semState returns the semaphore state an entry holds, or nil.
func semState(e *entry) *semstate.State {
	if e == nil {
		return nil
	}
	st, _ := e.state.(*semstate.State)
	return st
}
