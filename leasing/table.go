package leasing

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/denial"
)

// leaseShards is the most shards the lease table has; WithMaxKeys below it uses fewer, so
// that the bound holds exactly.
const leaseShards = 32

type leaseShard struct {
	mu  sync.Mutex
	m   map[leaseKey]*lease
	cap int // the leases this shard holds at most: its part of WithMaxKeys
	// resetting counts the Resets running on a key: while one runs, the key's requests go
	// to the inner store, so that no lease holds a slice that the Reset forgets.
	resetting map[leaseKey]int
	// gone is the latest slice At (µs) of the leases that left this shard (evicted,
	// reset, or filled after they left): a new lease's first slice at or before it might
	// share its At with their grants (see lease.own).
	gone atomic.Int64
	_    [24]byte // keeps two shards' locks off one cache line
}

// left records that a lease whose slice was granted at `at` left sh.
func (sh *leaseShard) left(at int64) {
	for {
		g := sh.gone.Load()
		if at <= g || sh.gone.CompareAndSwap(g, at) {
			return
		}
	}
}

type leaseKey struct{ key, slot string }

// lease is the slice of one key's quota this process holds; guarded by its own mutex,
// which is never held while calling the inner store.
type lease struct {
	mu   sync.Mutex
	key  string // its own key: an evicted lease gives its leftover back there
	a    algo.Algorithm
	dead bool  // out of the table (evicted, reset, closed): never granted from or filled again
	size int64 // the permits the slice held (Slice, or less at a quota's tail)
	left int64 // permits not yet granted
	at   int64 // the slice's Decision.At, which identifies it to Refund
	// own is set when at tells the slice's grants from every earlier one's of this key: at
	// is later than top, the latest At of this lease's earlier slices and of the leases
	// that left its shard before it was made (leaseShard.gone). Without it a refund of an
	// earlier slice's grant at the same instant would be credited to this slice and
	// granted again late, beyond the processes × slice the package documents.
	own bool
	top int64
	// charged is set when a charge of the key reached the inner store past this slice
	// (Store.charge): the key may be in debt there, so a refund of the slice's grants goes
	// to the inner store, into that debt, as on a plain store. Credited to the lease it
	// would be granted again at once, a permit counted before the charge used after it,
	// one the charge would have taken had the lease still held it.
	charged bool
	limit   int64 // the slice's Decision.Limit
	remain  int64 // the inner store's Remaining after the slice
	// start is when the slice was asked for (Store.tick); the inner store decided at that
	// instant truncated to whole µs, skew before it, and its ResetAfter (reset) counts
	// from there.
	start time.Duration
	skew  time.Duration
	reset time.Duration
	life  time.Duration // the lease ends life after start: TTL (a fixed window: or its end)
	dry   time.Time     // a slice was denied: no slice is asked for before this instant
	// denied remembers, while slices are denied, the inner store's denials of single
	// requests (by N) until their RetryAfter: a key hammered over its limit is answered
	// here instead of by the inner store.
	denied []memo
	// busy is set while one caller asks the inner store for the lease (a slice, or a
	// request while slices are denied); the others wait for done.
	busy    bool
	done    chan struct{}
	waiting []*waiter // the callers waiting for done, in turn
}

// memo is a remembered denial of requests of n permits.
type memo struct {
	n int64
	e denial.Entry
}

// maxMemos bounds the distinct request sizes a lease remembers denials of.
const maxMemos = 4

// denial returns the live denial of n permits at now (µs), or nil; l is locked.
func (l *lease) denial(n, now int64) *denial.Entry {
	for i := range l.denied {
		if m := &l.denied[i]; m.n == n && m.e.Live(now) {
			return &m.e
		}
	}
	return nil
}

// remember keeps the denial d of n permits asked at sent (µs); l is locked.
func (l *lease) remember(n int64, d algo.Decision, sent int64) {
	e := denial.Of(d, sent, 0)
	for i := range l.denied {
		if l.denied[i].n == n {
			l.denied[i].e = e
			return
		}
	}
	if len(l.denied) == maxMemos {
		l.denied = append(l.denied[:0], l.denied[1:]...) // forget the oldest size
	}
	l.denied = append(l.denied, memo{n, e})
}

// shard returns the shard holding k.
func (s *Store) shard(k leaseKey) *leaseShard {
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(k.key)
	h.WriteString(k.slot)
	return &s.shards[h.Sum64()%uint64(len(s.shards))]
}

// lookup returns k's live lease, locked, creating it when create is set (see Store.create).
// It returns nil when k has none and create is not set, while a Reset of k runs, and when
// it would create the lease once Close has begun.
func (s *Store) lookup(ctx context.Context, k leaseKey, create bool) *lease {
	if v, ok := s.live.Load(k); ok { // no shard lock for a key that holds a lease
		l := v.(*lease)
		l.mu.Lock()
		if !l.dead {
			return l
		}
		l.mu.Unlock()
	}
	sh := s.shard(k)
	for {
		sh.mu.Lock()
		if sh.resetting[k] > 0 {
			sh.mu.Unlock()
			return nil
		}
		l := sh.m[k]
		sh.mu.Unlock()
		if l == nil {
			if !create {
				return nil
			}
			if l = s.create(ctx, sh, k); l == nil {
				return nil
			}
		}
		l.mu.Lock()
		if !l.dead {
			return l
		}
		l.mu.Unlock() // it left the table after we found it: look again
	}
}

// create makes k's lease in sh, evicting others when sh is full and giving back their
// leftovers, and returns it (unlocked): the lease already there when another caller made
// it meanwhile. It holds s.fills for reading throughout, as a refill does, so that Close,
// which closes the inner store, waits for those leftovers to reach it; it returns nil
// once Close has begun, and while a Reset of k runs.
func (s *Store) create(ctx context.Context, sh *leaseShard, k leaseKey) *lease {
	s.fills.RLock()
	defer s.fills.RUnlock()
	if s.closed.Load() {
		return nil
	}
	sh.mu.Lock()
	if sh.resetting[k] > 0 {
		sh.mu.Unlock()
		return nil
	}
	l := sh.m[k]
	var out []*lease
	if l == nil {
		if len(sh.m) >= sh.cap {
			out = s.evict(sh)
		}
		l = &lease{key: k.key, top: sh.gone.Load()}
		sh.m[k] = l
		s.live.Store(k, l)
	}
	sh.mu.Unlock()
	for _, o := range out {
		s.giveBack(ctx, o)
	}
	return l
}

// evict removes the ended leases of a full shard, or else one that no caller is filling,
// returning what they held to give back; sh is locked. A lease being filled is never
// evicted: the shard holds one more until the fill lands.
func (s *Store) evict(sh *leaseShard) []*lease {
	now := s.clock.Now()
	var out []*lease
	drop := func(k leaseKey, l *lease) {
		if c := s.remove(sh, k, l); c.left > 0 {
			out = append(out, c)
		}
	}
	for k, l := range sh.m {
		l.mu.Lock()
		if !l.busy && s.ticks(now)-l.start >= l.life && !now.Before(l.dry) {
			drop(k, l)
		}
		l.mu.Unlock()
	}
	for k, l := range sh.m {
		if len(sh.m) < sh.cap {
			break
		}
		l.mu.Lock()
		if !l.busy {
			drop(k, l)
		}
		l.mu.Unlock()
	}
	return out
}

// detach empties l and returns a copy holding what it had, to give back; l is locked.
func (l *lease) detach() *lease {
	c := &lease{key: l.key, a: l.a, left: l.left, at: l.at}
	l.left = 0
	return c
}

// remove takes l, the lease of k, out of sh for good and returns what it held; sh and l
// are locked.
func (s *Store) remove(sh *leaseShard, k leaseKey, l *lease) *lease {
	delete(sh.m, k)
	s.live.Delete(k)
	sh.left(l.at)
	return l.kill()
}

// kill marks l out of the table for good and returns what it held; l is locked.
func (l *lease) kill() *lease {
	l.dead = true
	l.denied = nil
	return l.detach()
}

// giveBack refunds, to its own key, what a lease did not grant. A failure only loses
// those permits (under-admission), so it is not reported.
func (s *Store) giveBack(ctx context.Context, l *lease) {
	if l == nil || l.left <= 0 {
		return
	}
	_ = s.inner.Refund(context.WithoutCancel(ctx), l.key, l.a, l.left, l.at)
}

// drop takes k's lease out of the table and marks it dead, forgetting what it holds
// (Reset); with resetting set it also counts a Reset running on k.
func (s *Store) drop(k leaseKey, resetting int) {
	sh := s.shard(k)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if resetting != 0 {
		if sh.resetting == nil {
			sh.resetting = map[leaseKey]int{}
		}
		if sh.resetting[k] += resetting; sh.resetting[k] <= 0 {
			delete(sh.resetting, k)
		}
	}
	if l := sh.m[k]; l != nil {
		l.mu.Lock()
		s.remove(sh, k, l)
		l.mu.Unlock()
	}
}
