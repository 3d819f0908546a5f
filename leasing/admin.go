package leasing

import (
	"context"
	"errors"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/storecheck"
	"github.com/ratekit/limiter/store"
)

// Peek answers what Apply would (store.Admin), consuming nothing: a grant from key's lease
// when it holds enough, the remembered denial of the request while slices are denied, and
// otherwise the inner store's Peek (which does not count the permits held in leases).
// Without store.Admin on the inner store it reports store.ErrUnsupported.
func (s *Store) Peek(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	ad, ok := s.inner.(store.Admin)
	if !ok {
		return algo.Decision{}, store.ErrUnsupported
	}
	if err := storecheck.Call(ctx, key, a, req, s.closed.Load()); err != nil {
		return algo.Decision{}, err
	}
	if req.MaxWait == 0 && req.N <= s.slice && leased(a) {
		if l := s.lookup(ctx, leaseKey{key, a.Slot()}, false); l != nil {
			now := s.clock.Now()
			d, ok := l.grant(a, req, s.ticks(now), false)
			if e := l.denial(req.N, now.UnixMicro()); !ok && l.a == a && e != nil {
				d, ok = e.Answer(now.UnixMicro()), true
			}
			l.mu.Unlock()
			if ok {
				if d.Allowed {
					d.Remaining += req.N // a peek reports what is there before the request (algo.Peek)
				}
				return d, nil
			}
		}
	}
	return ad.Peek(ctx, key, a, req)
}

// Reset drops this process's leases of key under rules, forgetting their permits with the
// state, and resets the inner store's state (store.Admin). While it runs, the key's
// requests go to the inner store, and a slice in flight when it began is not kept: no
// lease grants from a slice that the Reset forgot. Leases of other processes keep granting
// until they end.
func (s *Store) Reset(ctx context.Context, key string, rules ...algo.Algorithm) error {
	ad, ok := s.inner.(store.Admin)
	if !ok {
		return store.ErrUnsupported
	}
	if s.closed.Load() {
		return store.ErrClosed
	}
	if err := storecheck.Reset(key, rules); err != nil {
		return err
	}
	for _, a := range rules {
		s.drop(leaseKey{key, a.Slot()}, 1)
	}
	defer func() {
		for _, a := range rules {
			s.drop(leaseKey{key, a.Slot()}, -1)
		}
	}()
	return ad.Reset(ctx, key, rules...)
}

// Clock returns the clock the leases are kept on: the inner store's, else real time.
func (s *Store) Clock() clockx.Clock { return s.clock }

// Close waits for the slices in flight to land and for the leftovers that evictions are
// giving back to reach the inner store, gives back every lease's leftover (within
// ctx-free calls bounded by the inner store's own timeout), then closes the inner store.
// Later calls return store.ErrClosed. Close is idempotent; it returns the inner store's
// Close error, or the first failed give-back.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.fills.Lock()
	defer s.fills.Unlock()
	var errs []error
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		var out []*lease
		for _, l := range sh.m {
			l.mu.Lock()
			if c := l.kill(); c.left > 0 {
				out = append(out, c)
			}
			l.mu.Unlock()
		}
		for k := range sh.m {
			s.live.Delete(k)
		}
		clear(sh.m)
		sh.mu.Unlock()
		for _, c := range out {
			if err := s.inner.Refund(context.Background(), c.key, c.a, c.left, c.at); err != nil {
				errs = append(errs, err)
			}
		}
	}
	errs = append(errs, s.inner.Close())
	return errors.Join(errs...)
}
