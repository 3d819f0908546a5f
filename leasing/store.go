package leasing

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/nilcheck"
	"github.com/ratekit/limiter/internal/storecheck"
	"github.com/ratekit/limiter/store"
)

// Compile-time checks: a Store is a store.Store that reports its clock and forwards the
// operators' calls.
var (
	_ store.Store   = (*Store)(nil)
	_ store.Clocked = (*Store)(nil)
	_ store.Admin   = (*Store)(nil)
)

// Store grants permits of hot keys from local leases of their quota, taken from an inner
// store.Store (see the package documentation for the bounds). It is safe for concurrent use.
// Create one with [New]; the zero value is not usable.
type Store struct {
	inner   store.Store
	slice   int64
	ttl     time.Duration
	clock   clockx.Clock
	seed    maphash.Seed
	perShrd int
	closed  atomic.Bool
	shards  [leaseShards]leaseShard
}

const leaseShards = 32

type leaseShard struct {
	mu sync.Mutex
	m  map[leaseKey]*lease
	_  [48]byte // keeps two shards' locks off one cache line
}

type leaseKey struct{ key, slot string }

// lease is the slice of one key's quota this process holds; guarded by its own mutex.
type lease struct {
	mu     sync.Mutex
	a      algo.Algorithm
	left   int64     // permits not yet granted
	at     int64     // the slice's Decision.At, which identifies it to Refund
	limit  int64     // the slice's Decision.Limit
	remain int64     // the inner store's Remaining after the slice
	taken  time.Time // when the slice was asked for
	reset  time.Duration
	ends   time.Time // the lease ends here: taken + TTL (a fixed window: or its end)
	dry    time.Time // a slice was denied: no slice is asked for before this instant
	// busy is set while one caller takes the next slice; the others wait for done.
	busy bool
	done chan struct{}
}

// New returns a Store that leases slices of slice permits from inner. It takes ownership
// of inner: Close gives back the leases' leftovers and then closes inner. A nil inner or a
// slice < 1 is an error wrapping algo.ErrInvalidConfig, as is an invalid option. The
// leases are kept on inner's clock (store.Clocked), else on real time.
func New(inner store.Store, slice int64, opts ...Option) (*Store, error) {
	if nilcheck.Nil(inner) {
		return nil, fmt.Errorf("%w: leasing.New: the store is nil", algo.ErrInvalidConfig)
	}
	if slice < 1 {
		return nil, fmt.Errorf("%w: leasing.New: the slice must be ≥ 1, got %d", algo.ErrInvalidConfig, slice)
	}
	o := options{ttl: DefaultTTL, maxKeys: DefaultMaxKeys}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	if o.err != nil {
		return nil, o.err
	}
	s := &Store{inner: inner, slice: slice, ttl: o.ttl, clock: clockx.Real(), seed: maphash.MakeSeed(),
		perShrd: (o.maxKeys + leaseShards - 1) / leaseShards}
	if c, ok := inner.(store.Clocked); ok {
		s.clock = c.Clock()
	}
	for i := range s.shards {
		s.shards[i].m = make(map[leaseKey]*lease)
	}
	return s, nil
}

// leased reports whether a's permits can be taken in slices (algo.Leasable): the rate
// algorithms whose grants may be used a little later (not the smooth ones, whose point is
// the spacing), also when wrapped (algo.Named, or any wrapper with Unwrap).
func leased(a algo.Algorithm) bool {
	return algo.CapabilitiesOf(a)&algo.Leasable != 0
}

func (s *Store) shard(k leaseKey) *leaseShard {
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(k.key)
	h.WriteString(k.slot)
	return &s.shards[h.Sum64()%leaseShards]
}

// lease returns key's lease under a's slot, creating it.
func (s *Store) lease(ctx context.Context, k leaseKey) *lease {
	sh := s.shard(k)
	sh.mu.Lock()
	l := sh.m[k]
	if l == nil {
		var out []*lease
		if len(sh.m) >= s.perShrd {
			out = s.evict(sh, k)
		}
		l = &lease{}
		sh.m[k] = l
		sh.mu.Unlock()
		for _, o := range out {
			s.giveBack(ctx, k.key, o)
		}
		return l
	}
	sh.mu.Unlock()
	return l
}

// evict removes the ended leases of a full shard, or an arbitrary one, returning those
// with permits to give back; sh is locked.
func (s *Store) evict(sh *leaseShard, _ leaseKey) []*lease {
	now := s.clock.Now()
	var out []*lease
	for k, l := range sh.m {
		l.mu.Lock()
		if !l.busy && !now.Before(l.ends) {
			delete(sh.m, k)
			if l.left > 0 {
				out = append(out, l.detach())
			}
		}
		l.mu.Unlock()
	}
	if len(sh.m) < s.perShrd {
		return out
	}
	for k, l := range sh.m {
		l.mu.Lock()
		if !l.busy {
			delete(sh.m, k)
			if l.left > 0 {
				out = append(out, l.detach())
			}
			l.mu.Unlock()
			return out
		}
		l.mu.Unlock()
	}
	return out
}

// detach empties l and returns a copy holding what it had, to give back; l is locked.
func (l *lease) detach() *lease {
	c := &lease{a: l.a, left: l.left, at: l.at}
	l.left = 0
	return c
}

// giveBack refunds what an ended lease did not grant. A failure only loses those permits
// (under-admission), so it is not reported.
func (s *Store) giveBack(ctx context.Context, key string, l *lease) {
	if l == nil || l.left <= 0 {
		return
	}
	_ = s.inner.Refund(context.WithoutCancel(ctx), key, l.a, l.left, l.at)
}

// Apply grants req from key's lease under a when it holds enough, without calling the
// inner store; otherwise it takes the next slice (giving back the ended lease's leftover
// first), or, while slices are denied, asks the inner store for req itself. Requests that
// are not leased (see the package documentation) go to the inner store. A local grant
// reports At as the slice's (Refund gives the permits back to the lease while it lasts),
// Remaining as the lease's leftover plus what the inner store had left when the slice
// was taken, and ResetAfter counted down from the slice's. Errors are the inner store's.
func (s *Store) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	if err := storecheck.Call(ctx, key, a, req, s.closed.Load()); err != nil {
		return algo.Decision{}, err
	}
	if req.MaxWait > 0 || req.N > s.slice || !leased(a) {
		return s.inner.Apply(ctx, key, a, req)
	}
	l := s.lease(ctx, leaseKey{key, a.Slot()})
	for {
		now := s.clock.Now()
		l.mu.Lock()
		if l.a == a && l.left >= req.N && now.Before(l.ends) {
			l.left -= req.N
			d := algo.Decision{Allowed: true, Limit: l.limit, Remaining: l.left + l.remain, At: l.at, ResetAfter: l.reset}
			if l.reset != algo.Never {
				d.ResetAfter = max(0, l.reset-now.Sub(l.taken))
			}
			l.mu.Unlock()
			return d, nil
		}
		if l.busy {
			done := l.done
			l.mu.Unlock()
			select {
			case <-done:
				continue
			case <-ctx.Done():
				return algo.Decision{}, ctx.Err()
			}
		}
		if l.a == a && now.Before(l.dry) {
			l.mu.Unlock() // slices are denied for now: ask for req alone
			return s.inner.Apply(ctx, key, a, req)
		}
		old := l.detach()
		l.busy, l.done = true, make(chan struct{})
		l.mu.Unlock()
		return s.refill(ctx, key, a, req, l, old, now)
	}
}

// refill gives back old, takes a new slice into l (which the caller marked busy) and
// answers req from it, or from the inner store if the slice is denied.
func (s *Store) refill(ctx context.Context, key string, a algo.Algorithm, req algo.Request, l, old *lease, now time.Time) (algo.Decision, error) {
	s.giveBack(ctx, key, old)
	d, err := s.inner.Apply(ctx, key, a, algo.Request{N: s.slice})
	l.mu.Lock()
	l.busy = false
	close(l.done)
	if err != nil {
		l.mu.Unlock()
		return algo.Decision{}, err
	}
	if !d.Allowed {
		l.a, l.dry = a, now.Add(d.RetryAfter)
		if d.RetryAfter == algo.Never || l.dry.Before(now) {
			l.dry = now.Add(s.ttl)
		}
		l.mu.Unlock()
		return s.inner.Apply(ctx, key, a, req)
	}
	life := s.ttl
	if algo.CapabilitiesOf(a)&algo.LeaseEndsAtReset != 0 {
		// A fixed window's ResetAfter is its end: a lease never outlives the window
		// that counted it. (The buckets' ResetAfter is their refill time, shorter than
		// a slice's use for a hot key; the sliding windows need no cap for the bound.)
		life = min(life, d.ResetAfter)
	}
	l.a, l.left, l.at, l.limit, l.remain = a, s.slice-req.N, d.At, d.Limit, d.Remaining
	l.taken, l.reset, l.ends, l.dry = now, d.ResetAfter, now.Add(life), time.Time{}
	out := algo.Decision{Allowed: true, Limit: d.Limit, Remaining: l.left + l.remain, At: d.At, ResetAfter: d.ResetAfter}
	l.mu.Unlock()
	return out, nil
}

// Refund gives n permits of a grant back: to key's lease when the grant came from it
// (at is the lease's slice) and the lease still lasts, otherwise to the inner store.
func (s *Store) Refund(ctx context.Context, key string, a algo.Algorithm, n int64, at int64) error {
	if err := storecheck.Call(ctx, key, a, algo.Request{N: n}, s.closed.Load()); err != nil {
		return err
	}
	if leased(a) {
		k := leaseKey{key, a.Slot()}
		sh := s.shard(k)
		sh.mu.Lock()
		l := sh.m[k]
		sh.mu.Unlock()
		if l != nil {
			l.mu.Lock()
			if l.a == a && l.at == at && s.clock.Now().Before(l.ends) && l.left+n <= s.slice {
				l.left += n
				l.mu.Unlock()
				return nil
			}
			l.mu.Unlock()
		}
	}
	return s.inner.Refund(ctx, key, a, n, at)
}

// Peek forwards to the inner store (store.Admin): what a call that goes to it would
// answer, not counting the permits held in leases. Without store.Admin on the inner store
// it reports store.ErrUnsupported.
func (s *Store) Peek(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	ad, ok := s.inner.(store.Admin)
	if !ok {
		return algo.Decision{}, store.ErrUnsupported
	}
	if s.closed.Load() {
		return algo.Decision{}, store.ErrClosed
	}
	return ad.Peek(ctx, key, a, req)
}

// Reset drops this process's leases of key under rules (their permits are forgotten with
// the state) and resets the inner store's state (store.Admin). Leases of other processes
// keep granting until they end.
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
		k := leaseKey{key, a.Slot()}
		sh := s.shard(k)
		sh.mu.Lock()
		if l := sh.m[k]; l != nil {
			l.mu.Lock()
			l.left, l.dry = 0, time.Time{}
			l.mu.Unlock()
		}
		sh.mu.Unlock()
	}
	return ad.Reset(ctx, key, rules...)
}

// Clock returns the clock the leases are kept on: the inner store's, else real time.
func (s *Store) Clock() clockx.Clock { return s.clock }

// Close gives back every lease's leftover (within ctx-free calls bounded by the inner
// store's own timeout), then closes the inner store. Later calls return store.ErrClosed.
// Close is idempotent; it returns the inner store's Close error, or the first failed
// give-back.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	var errs []error
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for k, l := range sh.m {
			l.mu.Lock()
			old := l.detach()
			l.mu.Unlock()
			if old.left > 0 {
				if err := s.inner.Refund(context.Background(), k.key, old.a, old.left, old.at); err != nil {
					errs = append(errs, err)
				}
			}
		}
		clear(sh.m)
		sh.mu.Unlock()
	}
	errs = append(errs, s.inner.Close())
	return errors.Join(errs...)
}
