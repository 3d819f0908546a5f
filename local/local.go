package local

import (
	"context"
	"hash/maphash"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/store"
)

var _ store.Store = (*Store)(nil)

// Store is an in-memory store.Store. It is safe for concurrent use. Create it with [New]
// and release its sweeper with Close.
type Store struct {
	clock   clockx.Clock
	onReal  bool // clock is clockx.Real(): read it with realMicros, the cheaper way
	seed    maphash.Seed
	shards  []shard
	mask    uint64
	perMax  int // keys per shard, 0 = unbounded
	closed  atomic.Bool
	stop    chan struct{}
	stopped sync.WaitGroup
	once    sync.Once
}

// shard is one lock domain. The padding keeps two shards' mutexes off one cache line.
type shard struct {
	mu sync.Mutex
	m  map[slotKey]*entry
	_  [40]byte
}

// slotKey names one state: a user key under one algorithm slot. A struct of two strings
// hashes without building a combined string, so lookups allocate nothing.
type slotKey struct {
	slot, key string
}

type entry struct {
	state algo.State
	fresh int64 // µs at which state equals a fresh one; the entry can go then
}

// New returns an in-memory store. It starts one sweeper goroutine (unless disabled with
// WithSweepInterval(0)); call Close to stop it.
func New(opts ...Option) *Store {
	o := options{
		clock:  clockx.Real(),
		shards: 4 * runtime.GOMAXPROCS(0),
		sweep:  time.Minute,
	}
	for _, opt := range opts {
		opt.apply(&o)
	}
	n := 1
	if o.shards > 1 {
		n = 1 << bits.Len(uint(o.shards-1)) // round up to a power of two
	}
	s := &Store{
		clock:  o.clock,
		onReal: o.clock == clockx.Real(),
		seed:   maphash.MakeSeed(),
		shards: make([]shard, n),
		mask:   uint64(n - 1),
		stop:   make(chan struct{}),
	}
	if o.maxKeys > 0 {
		s.perMax = max(1, (o.maxKeys+n-1)/n)
	}
	for i := range s.shards {
		s.shards[i].m = make(map[slotKey]*entry)
	}
	if o.sweep > 0 {
		s.stopped.Add(1)
		go s.sweeper(o.sweep)
	}
	return s
}

// now returns the store's time in µs since the Unix epoch.
func (s *Store) now() int64 {
	if s.onReal {
		return realMicros()
	}
	return clockx.Micros(s.clock.Now())
}

// fallbackMicros is the portable reading of the real time in µs.
func fallbackMicros() int64 { return time.Now().UnixMicro() }

func (s *Store) shard(key string) *shard {
	return &s.shards[maphash.String(s.seed, key)&s.mask]
}

// Apply answers req for key under a at the store's now. See store.Store.
func (s *Store) Apply(_ context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	if err := store.Check(key, a, req); err != nil {
		return algo.Decision{}, err
	}
	if s.closed.Load() {
		return algo.Decision{}, store.ErrClosed
	}
	k := slotKey{slot: a.Slot(), key: key}
	sh := s.shard(key)
	sh.mu.Lock()
	now := s.now()
	e := sh.m[k]
	if e == nil {
		e = s.insert(sh, k, a, now)
	}
	d := a.Apply(e.state, now, req)
	e.fresh = freshAt(now, d)
	sh.mu.Unlock()
	return d, nil
}

// freshAt is when, in µs, a state just decided by d at now equals a fresh one: the
// instant its entry may be swept.
func freshAt(now int64, d algo.Decision) int64 {
	return now + int64(d.ResetAfter/time.Microsecond)
}

// Refund gives back n permits of an earlier grant. See store.Store.
func (s *Store) Refund(_ context.Context, key string, a algo.Algorithm, n int64, at int64) error {
	if err := store.Check(key, a, algo.Request{N: n}); err != nil {
		return err
	}
	if s.closed.Load() {
		return store.ErrClosed
	}
	k := slotKey{slot: a.Slot(), key: key}
	sh := s.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e := sh.m[k]; e != nil {
		a.Refund(e.state, s.now(), n, at)
	}
	return nil
}

// insert adds a fresh entry for k, making room first when the shard is full. It is
// called with sh.mu held.
func (s *Store) insert(sh *shard, k slotKey, a algo.Algorithm, now int64) *entry {
	if s.perMax > 0 && len(sh.m) >= s.perMax {
		sh.sweep(now, sweepBatch)
		if len(sh.m) >= s.perMax {
			sh.evictNearestFresh(8)
		}
	}
	e := &entry{state: a.NewState()}
	sh.m[k] = e
	return e
}

// Len returns the number of keys held (a key under two algorithm slots counts twice).
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += len(sh.m)
		sh.mu.Unlock()
	}
	return n
}

// Close stops the sweeper and makes later calls return store.ErrClosed. It is idempotent.
func (s *Store) Close() error {
	s.once.Do(func() {
		s.closed.Store(true)
		close(s.stop)
		s.stopped.Wait()
	})
	return nil
}
