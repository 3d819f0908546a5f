package leasing

import (
	"context"
	"fmt"
	"hash/maphash"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/algocmp"
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
	inner  store.Store
	slice  int64
	ttl    time.Duration
	clock  clockx.Clock
	real   bool      // clock is clockx.Real(): see tick
	epoch  time.Time // read from clock by New: see tick
	seed   maphash.Seed
	closed atomic.Bool
	// fills is held for reading by every call that takes a slice and for writing by Close,
	// so that Close gives back the slices in flight once they land, before closing inner.
	fills  sync.RWMutex
	shards []leaseShard
	// live holds every lease of the shards' tables (leaseKey → *lease), written with
	// them under the shard's lock and read without it: a lookup of a key that holds a
	// lease takes no shard lock.
	live sync.Map
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
	o := options{ttl: defaultTTL, maxKeys: defaultMaxKeys}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	if o.err != nil {
		return nil, o.err
	}
	s := &Store{inner: inner, slice: slice, ttl: o.ttl, clock: clockx.Real(), seed: maphash.MakeSeed()}
	if c, ok := inner.(store.Clocked); ok {
		s.clock = c.Clock()
	}
	s.real, s.epoch = s.clock == clockx.Real(), s.clock.Now()
	// WithMaxKeys(n) is exact: n below leaseShards uses n shards of one lease, and the
	// shards' shares of n differ by at most one.
	s.shards = make([]leaseShard, min(leaseShards, o.maxKeys))
	for i := range s.shards {
		s.shards[i].m = make(map[leaseKey]*lease)
		s.shards[i].cap = o.maxKeys / len(s.shards)
		if i < o.maxKeys%len(s.shards) {
			s.shards[i].cap++
		}
	}
	return s, nil
}

// tick returns the time on s.clock as the span since s.epoch, which the leases count
// from: on real time it reads the monotonic clock alone, half the cost of a time.Now,
// which every grant from a lease needs (and it ignores steps of the wall clock).
func (s *Store) tick() time.Duration {
	if s.real {
		return time.Since(s.epoch)
	}
	return s.clock.Now().Sub(s.epoch)
}

// ticks is tick of an instant read from s.clock.
func (s *Store) ticks(t time.Time) time.Duration { return t.Sub(s.epoch) }

// leased reports whether a's permits can be taken in slices (algo.Leasable): the rate
// algorithms whose grants may be used a little later (not the smooth ones, whose point is
// the spacing), also when wrapped (algo.Named, or any wrapper with Unwrap). A config whose
// type == cannot compare is not (see Apply for one whose values cannot be compared): this
// check costs no allocation, and keeps such a config's keys out of the lease table.
func leased(a algo.Algorithm) bool {
	return algo.CapabilitiesOf(a)&algo.Leasable != 0 && reflect.TypeOf(a).Comparable()
}

// Apply grants req from key's lease under a when it holds enough, without calling the
// inner store; otherwise it takes the next slice (giving back the ended lease's leftover
// first). When the inner store denies the slice, it asks for the permits the store still
// has (the quota's tail) or else for req alone, and until the slice's RetryAfter it asks
// for no slice; a denial of req is remembered until its RetryAfter and answered without
// calling the inner store. Requests that are not leased (see the package documentation) go
// to the inner store. A local grant reports At as the slice's (Refund gives the permits back
// to the lease while it lasts), Remaining as the lease's leftover plus what the inner store
// had left when the slice was taken, and ResetAfter counted down from the slice's. A
// Charge takes what the lease holds and the rest from the inner store (see charge). Errors
// are the inner store's.
func (s *Store) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	if err := storecheck.Call(ctx, key, a, req, s.closed.Load()); err != nil {
		return algo.Decision{}, err
	}
	if req.Charge {
		return s.charge(ctx, key, a, req)
	}
	if req.MaxWait > 0 || req.N > s.slice || !leased(a) {
		return s.inner.Apply(ctx, key, a, req)
	}
	k := leaseKey{key, a.Slot()}
lookup:
	for {
		if s.closed.Load() {
			return algo.Decision{}, store.ErrClosed
		}
		l := s.lookup(ctx, k, true)
		if l == nil {
			if s.closed.Load() {
				return algo.Decision{}, store.ErrClosed
			}
			// A Reset of the key is running: no lease until it is done.
			return s.inner.Apply(ctx, key, a, req)
		}
		for {
			// The time is read under the lease's lock, so that no grant is decided at an
			// instant before one that ended the lease.
			if d, ok := l.grant(a, req, s.tick(), true); ok {
				l.mu.Unlock()
				return d, nil
			}
			now := s.clock.Now()
			if l.a == a {
				if e := l.denial(req.N, now.UnixMicro()); e != nil {
					d := e.Answer(now.UnixMicro())
					l.mu.Unlock()
					return d, nil
				}
			} else if !algocmp.Comparable(a) {
				// A lease keeps its config to compare later requests' with ==, which
				// would panic on a config that cannot be compared: such a config is not
				// leased. (Every config a lease keeps is comparable, so the comparisons
				// above, with any request's config, never panic.)
				l.mu.Unlock()
				return s.inner.Apply(ctx, key, a, req)
			}
			if l.busy {
				// Wait for the call in flight: a refill grants the waiters from its slice
				// before it wakes them, so that each need not take the lock again.
				w := waiters.Get().(*waiter)
				w.a, w.n = a, req.N
				l.waiting = append(l.waiting, w)
				done := l.done
				l.mu.Unlock()
				if cancel := ctx.Done(); cancel == nil {
					<-done // a context never cancelled: one channel to wait on, not a select
				} else {
					select {
					case <-done:
					case <-cancel:
						l.mu.Lock()
						if !w.ok { // still waiting: the refill must skip it
							w.gone = true
							l.mu.Unlock()
							return algo.Decision{}, ctx.Err()
						}
						l.mu.Unlock()
						<-done // granted just before: the refill has woken it, or is about to
					}
				}
				if w.ok {
					d := w.d
					*w = waiter{}
					waiters.Put(w)
					return d, nil
				}
				*w = waiter{}
				waiters.Put(w)
				l.mu.Lock()
				if l.dead {
					l.mu.Unlock()
					continue lookup
				}
				continue
			}
			l.busy, l.done = true, make(chan struct{})
			if l.a == a && now.Before(l.dry) {
				l.mu.Unlock() // slices are denied for now: ask for req alone
				return s.ask(ctx, a, req, l, now)
			}
			old := l.detach()
			l.mu.Unlock()
			return s.refill(ctx, a, req, l, old, now)
		}
	}
}

// charge records req (a Charge) of key under a: it takes what it can from key's live lease
// under a and the rest from the inner store as a Charge, so that every permit charged is
// counted once, on the slice the inner store already counted or on the inner store. It
// never waits for a slice in flight (the lease then holds none), never takes a slice, and
// is never answered from a remembered denial: a charge is never denied. A charge the lease
// covers is answered as a grant from the lease (RetryAfter 0: the next request asks the
// inner store when the lease runs out); one that reaches the inner store is answered by
// it. When that call fails, the permits taken from the lease go back to it, if it still
// holds that slice.
func (s *Store) charge(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	if !leased(a) {
		return s.inner.Apply(ctx, key, a, req)
	}
	l := s.lookup(ctx, leaseKey{key, a.Slot()}, false)
	if l == nil {
		return s.inner.Apply(ctx, key, a, req)
	}
	took, at, start := min(l.left, req.N), l.at, l.start
	d, ok := algo.Decision{}, false
	if took > 0 { // under another config, ended, or busy (a slice in flight): none
		d, ok = l.grant(a, algo.Request{N: took}, s.tick(), true)
	}
	if !ok || took < req.N {
		// Set before the call, so that no refund racing with it reaches the lease; kept
		// if the call fails (those refunds then go to the inner store: nothing is created).
		l.charged = true
	}
	l.mu.Unlock()
	if !ok {
		return s.inner.Apply(ctx, key, a, req)
	}
	if took == req.N {
		return d, nil
	}
	out, err := s.inner.Apply(ctx, key, a, algo.Request{N: req.N - took, Charge: true})
	if err != nil {
		l.mu.Lock()
		if !l.dead && l.at == at && l.start == start && !l.busy {
			l.left += took // the charge is not recorded: the slice keeps its permits
		}
		l.mu.Unlock()
	}
	return out, err
}

// grant answers req from l when it holds enough under a at t (Store.tick), taking the
// permits when take is set (Peek leaves them); l is locked.
func (l *lease) grant(a algo.Algorithm, req algo.Request, t time.Duration, take bool) (algo.Decision, bool) {
	elapsed := t - l.start
	if l.a != a || l.left < req.N || elapsed >= l.life {
		return algo.Decision{}, false
	}
	left := l.left - req.N
	if take {
		l.left = left
	}
	d := algo.Decision{Allowed: true, Limit: l.limit, Remaining: left + l.remain, At: l.at, ResetAfter: l.reset}
	if l.reset != algo.Never {
		d.ResetAfter = max(0, l.reset-(elapsed+l.skew))
	}
	return d, true
}

// land ends the call that marked l busy, waking the callers waiting for it; l is locked.
// Those the call did not grant (handOut) look at the lease again.
func (l *lease) land() {
	l.busy = false
	clear(l.waiting)
	l.waiting = l.waiting[:0]
	close(l.done)
}

// handOut grants the waiting callers, in turn, from the slice just taken at t
// (Store.tick); l is locked.
func (l *lease) handOut(t time.Duration) {
	for _, w := range l.waiting {
		if w.gone {
			continue
		}
		if d, ok := l.grant(w.a, algo.Request{N: w.n}, t, true); ok {
			w.d, w.ok = d, true
		}
	}
}

// waiter is a caller waiting for a lease's call in flight.
type waiter struct {
	a    algo.Algorithm
	n    int64
	d    algo.Decision // its grant, when ok
	ok   bool          // granted by the refill (read after the lease's done is closed)
	gone bool          // its context ended first: not to be granted
}

var waiters = sync.Pool{New: func() any { return new(waiter) }}

// ask answers req, while slices of l are denied, by asking the inner store for it alone
// (the caller marked l busy), and remembers a denial until its RetryAfter.
func (s *Store) ask(ctx context.Context, a algo.Algorithm, req algo.Request, l *lease, now time.Time) (algo.Decision, error) {
	d, err := s.inner.Apply(ctx, l.key, a, req)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.land()
	if err == nil && !l.dead {
		l.note(req.N, d, now)
	}
	return d, err
}

// note records the inner store's answer d to a request of n permits sent at now: a denial
// is remembered until its RetryAfter; a grant pushes the deadlines of the denials later,
// so they are forgotten and asked again; l is locked.
func (l *lease) note(n int64, d algo.Decision, now time.Time) {
	if d.Allowed {
		l.denied = l.denied[:0]
	} else if d.RetryAfter > 0 {
		l.remember(n, d, now.UnixMicro())
	}
}

// refill gives back old, takes a new slice into l (which the caller marked busy) and
// answers req from it. When the slice is denied it asks for the quota's tail (the
// permits the denial reports left, when they cover req) or else for req alone, and asks
// for no slice until the slice's RetryAfter.
func (s *Store) refill(ctx context.Context, a algo.Algorithm, req algo.Request, l, old *lease, now time.Time) (algo.Decision, error) {
	s.fills.RLock()
	defer s.fills.RUnlock()
	if s.closed.Load() { // Close has given back the leases: take nothing more
		l.mu.Lock()
		l.land()
		l.mu.Unlock()
		return algo.Decision{}, store.ErrClosed
	}
	s.giveBack(ctx, old)
	size := s.slice
	d, err := s.inner.Apply(ctx, l.key, a, algo.Request{N: size})
	dry := d
	if err == nil && !d.Allowed && d.Remaining >= req.N && d.Remaining < size {
		size = d.Remaining // the tail: the permits left, in one call instead of one by one
		d, err = s.inner.Apply(ctx, l.key, a, algo.Request{N: size})
	}
	if err == nil && !d.Allowed {
		size = 0
		d, err = s.inner.Apply(ctx, l.key, a, req)
	}
	l.mu.Lock()
	if err != nil {
		l.land()
		l.mu.Unlock()
		return algo.Decision{}, err
	}
	if size == 0 { // no slice: d answers req alone
		l.land()
		if !l.dead {
			if l.a != a {
				l.denied = l.denied[:0] // another config's denials say nothing of a's
			}
			l.a, l.dry = a, now.Add(dry.RetryAfter)
			if dry.RetryAfter == algo.Never || l.dry.Before(now) {
				l.dry = now.Add(s.ttl)
			}
			l.note(req.N, d, now)
		}
		l.mu.Unlock()
		return d, nil
	}
	out := algo.Decision{Allowed: true, Limit: d.Limit, Remaining: size - req.N + d.Remaining, At: d.At, ResetAfter: d.ResetAfter}
	if l.dead {
		l.land()
		// A Reset dropped the lease while the slice was in flight: the slice may have been
		// counted in the state the Reset forgot, so only req is granted from it (as a plain
		// store's request in flight at the Reset is) and the rest is forgotten with the state.
		l.mu.Unlock()
		s.shard(leaseKey{l.key, a.Slot()}).left(d.At) // its grant's At is no later lease's
		return out, nil
	}
	life := s.ttl
	if algo.CapabilitiesOf(a)&algo.LeaseEndsAtReset != 0 {
		// A fixed window's ResetAfter is its end: a lease never outlives the window
		// that counted it. (The buckets' ResetAfter is their refill time, shorter than
		// a slice's use for a hot key; the sliding windows need no cap for the bound.)
		life = min(life, d.ResetAfter)
	}
	l.a, l.size, l.left, l.at, l.limit, l.remain = a, size, size-req.N, d.At, d.Limit, d.Remaining
	l.own, l.top, l.charged = d.At > l.top, max(l.top, d.At), false
	// The inner store decided at now in whole µs, and its ResetAfter counts from there: a
	// lease counted from the ns instant would outlive a fixed window by up to 1 µs.
	taken := now.Truncate(time.Microsecond)
	l.start, l.skew, l.reset, l.life, l.dry, l.denied = s.ticks(now), now.Sub(taken), d.ResetAfter, life-now.Sub(taken), time.Time{}, l.denied[:0]
	l.handOut(s.tick())
	l.land()
	l.mu.Unlock()
	return out, nil
}

// Refund gives n permits of a grant back: to key's lease when the grant came from it (at
// is the lease's slice, and no earlier slice of the key has that At), the lease still
// lasts, holds no more than its slice after it, and no charge of the key has reached the
// inner store since the slice (see lease.charged); otherwise to the inner store. A lease
// that a Reset dropped is gone: the refund of its grants goes to the inner store, as on a
// plain store.
func (s *Store) Refund(ctx context.Context, key string, a algo.Algorithm, n int64, at int64) error {
	if err := storecheck.Call(ctx, key, a, algo.Request{N: n}, s.closed.Load()); err != nil {
		return err
	}
	if leased(a) {
		if l := s.lookup(ctx, leaseKey{key, a.Slot()}, false); l != nil {
			if l.a == a && l.own && !l.charged && l.at == at && s.tick()-l.start < l.life && n <= l.size-l.left {
				l.left += n
				l.mu.Unlock()
				return nil
			}
			// The inner store gets permits back: the denials and the dry spell may be over.
			l.denied, l.dry = l.denied[:0], time.Time{}
			l.mu.Unlock()
		}
	}
	return s.inner.Refund(ctx, key, a, n, at)
}
