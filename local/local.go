package local

import (
	"context"
	"math"
	"math/bits"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/storecheck"
	"github.com/ratekit/limiter/store"
)

var _ store.Store = (*Store)(nil)

// Store is an in-memory store.Store. Create it with [New] and release its sweeper with
// Close; the zero value is not usable. It is safe for concurrent use.
type Store struct {
	clock   clockx.Clock
	real    bool // clock is clockx.Real() (see now)
	hasher  hasher
	shards  []shard
	mask    uint64
	perMax  int // keys per shard, 0 = unbounded
	closed  atomic.Bool
	stop    chan struct{}
	stopped sync.WaitGroup
	once    sync.Once
	marks   marks // what the Resets left (marks.go)
}

// shard is one lock domain, padded to a multiple of 128 bytes (two cache lines) so that
// a call locking one shard never writes a line that a call on another shard reads.
//
// Its entries are in one table per algorithm slot (see table), the first one in the shard
// itself; every state of one key is in the key's shard, whatever its slot.
//
// over holds the shard's overflow states, one per algorithm slot (see insert): they are
// not in the tables and not counted in n.
type shard struct {
	shardFields
	_ [shardPad]byte
}

type shardFields struct {
	mu        sync.Mutex
	n         int                      // entries held
	more      atomic.Pointer[[]*table] // the tables of the other slots, replaced when one is added
	over      map[string]*entry
	overflows uint64    // requests of new keys that found the shard full (see Overflows)
	cfgs      [4]config // the configs interned last (see intern)
	first     table     // the table of the first slot used (empty until then): one load less
}

// shardPad fills a shard up to 128 bytes on 64-bit platforms, where shardFields takes 104
// (TestShardSize checks it; on 32-bit ones the padding is merely not exact).
const shardPad = 128 - 104

// New returns an in-memory store. It starts one sweeper goroutine (unless disabled with
// WithSweepInterval(0)); call Close to stop it. Nil options are skipped. An option with a
// value it cannot use (see each option) makes New return an error wrapping
// algo.ErrInvalidConfig that names it, and no Store.
func New(opts ...Option) (*Store, error) {
	o := options{
		clock:  clockx.Real(),
		shards: 4 * runtime.GOMAXPROCS(0),
		sweep:  time.Minute,
	}
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	if o.err != nil {
		return nil, o.err
	}
	n := 1
	if o.shards > 1 {
		n = 1 << bits.Len(uint(o.shards-1)) // round up to a power of two
	}
	s := &Store{
		clock:  o.clock,
		real:   o.clock == clockx.Real(),
		hasher: newHasher(),
		shards: make([]shard, n),
		mask:   uint64(n - 1),
		stop:   make(chan struct{}),
	}
	if o.maxKeys > 0 {
		s.perMax = max(1, o.maxKeys/n+min(1, o.maxKeys%n)) // rounded up without overflow
	}
	if o.sweep > 0 {
		s.stopped.Add(1)
		go s.sweeper(o.sweep)
	}
	return s, nil
}

// now returns the store's time in µs since the Unix epoch: s.clock.Now().UnixMicro(), read
// the cheaper way (realMicros) when the clock is clockx.Real().
func (s *Store) now() int64 {
	if s.real {
		return realMicros()
	}
	return s.clock.Now().UnixMicro()
}

// locate returns the hash of key and the shard that holds every state of key.
func (s *Store) locate(key string) (uint64, *shard) {
	h := s.hasher.hash(key)
	return h, &s.shards[h&s.mask]
}

// Apply answers req for key under a at the store's now. See store.Store.
//
// A key's entry is looked up without the shard's lock (see table) and, when its state was
// last written under a, decided under the entry's lock alone: a is valid (an invalid
// config never writes, so a.Validate is left out), revive would keep the state and wrote
// has nothing to record. Calls on distinct existing keys thus write no memory they share,
// and scale with the cores as separate limiters do. Every other call (a new key, a key
// last written under another config, an entry that went dead) validates a and is decided
// under the shard's lock too (applyLocked).
//
// A Charge (algo.Request.Charge) is decided as any request, new keys included: when a new
// key finds its shard full of keys still limiting (WithMaxKeys), an algo.OverflowSafe
// algorithm records the charge on the shard's overflow state (the new keys that share it
// pay the debt); any other algorithm has no state to record it on, since a shared one could
// later admit its keys sooner than their own would, so the charge is denied and records
// nothing, with the RetryAfter of the full shard. That is the one case a charge is denied:
// Allowed false says the usage was not recorded.
func (s *Store) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	// storecheck.Call's checks but a.Validate (req.Validate is N > 0 but for a Charge); a
	// failed one is reported by Call, in its order.
	if key == "" || a == nil || req.N <= 0 || req.Charge && !storecheck.Chargeable(a, req) || s.closed.Load() || storecheck.Context(ctx) != nil {
		if err := storecheck.Call(ctx, key, a, req, s.closed.Load()); err != nil {
			return algo.Decision{}, err
		}
	}
	slot := a.Slot()
	h, sh := s.locate(key)
	if e := sh.lookup(h, key, slot); e != nil {
		e.mu.Lock()
		if e.state != nil && is(e.cfg, a) {
			now := s.now()
			d := a.Apply(e.state, now, req)
			if d.Allowed || writesOnDenial(a) {
				e.fresh = freshAt(now, d)
			}
			e.mu.Unlock()
			return d, nil
		}
		e.mu.Unlock() // dead, or under another config: the locked way
	}
	return s.applyLocked(sh, h, key, slot, a, req)
}

// applyLocked is Apply under the shard's lock.
func (s *Store) applyLocked(sh *shard, h uint64, key, slot string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.find(h, key, slot)
	if e == nil || !is(e.cfg, a) { // cfg is written under both locks (wrote): either guards it
		if err := a.Validate(); err != nil {
			return algo.Decision{}, err
		}
	}
	now := s.now()
	if e == nil {
		var soon int64
		if e, soon = s.insert(sh, h, key, slot, a, now); e == nil {
			return fullDenial(a.Apply(a.NewState(), now, req), now, soon), nil
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.fresh <= now {
		revive(e, a, now)
	}
	d := a.Apply(e.state, now, req)
	if d.Allowed || writesOnDenial(a) {
		e.fresh = freshAt(now, d)
		sh.wrote(e, a)
	}
	return d, nil
}

// Expiry, the rule both stores follow: a state expires at the instant it would equal a
// fresh one, computed when it was last written, under the config of that write (Redis: the
// PEXPIRE the script set then). From that instant on the key starts fresh under the current
// config, even if the config changed since and the state, read under the new config, would
// not be fresh yet. So an entry whose fresh instant has passed is absent at lookup, whether
// or not the sweeper has removed it (see revive).

// revive is called on an entry whose fresh instant has passed, before a is applied to it.
// Under the config of its last write, its state decides like a fresh one: when a is that
// config it is kept, since its timestamps still guard against a clock stepping back (and
// a SmoothBursty's stored permits, which a fresh state would not have, stay as in Guava).
// Under another config it is replaced by a fresh state, as the expired Redis key is.
// A state that carries its config (algo.ConfigCarrier: the smooth algorithms') is the
// exception: it records its own config and rescales across a change, as Guava's setRate
// does (on Redis their key lingers a minute past ResetAfter, the documented SmoothBursty
// exception), so it is kept.
func revive(e *entry, a algo.Algorithm, _ int64) {
	if e.cfg != (config{}) && !is(e.cfg, a) && !carriesConfig(e.state) {
		e.state = a.NewState()
	}
}

// writesOnDenial reports whether a's denials may write its state (algo.WritesOnDenial: a
// Penalty's offence starts a block), so that a denial moves the entry's fresh instant too.
// CapabilitiesOf looks through wrappers, so a Penalty in any wrapper keeps its blocks.
func writesOnDenial(a algo.Algorithm) bool {
	return algo.CapabilitiesOf(a)&algo.WritesOnDenial != 0
}

// carriesConfig reports whether st carries itself across a change of config.
func carriesConfig(st algo.State) bool {
	c, ok := st.(algo.ConfigCarrier)
	return ok && c.CarriesConfig()
}

// nextFresh is an entry's fresh instant after d at now, its previous one being prev. A
// grant writes the state: its instant is d's. A denial writes nothing and the instant
// stays, as Redis keeps the TTL. (Taking d's when earlier, which happens after a config
// change, forgot states too early: the state may be fresh under the current config by then,
// but not under the next one, and a later config change made the entry start fresh where
// Redis still held its state.)
func nextFresh(prev, now int64, d algo.Decision) int64 {
	if d.Allowed {
		return freshAt(now, d)
	}
	return prev
}

// freshAt is when, in µs, a state just decided by d at now equals a fresh one: the
// instant its entry may be swept.
func freshAt(now int64, d algo.Decision) int64 {
	return now + int64(d.ResetAfter/time.Microsecond)
}

// Refund gives back n permits of an earlier grant. See store.Store.
func (s *Store) Refund(ctx context.Context, key string, a algo.Algorithm, n int64, at int64) error {
	if err := storecheck.Call(ctx, key, a, algo.Request{N: n}, s.closed.Load()); err != nil {
		return err
	}
	slot := a.Slot()
	h, sh := s.locate(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e := sh.find(h, key, slot); e != nil {
		e.mu.Lock()
		defer e.mu.Unlock()
		now := s.now()
		if s.marks.drops(key, slot, now, at) {
			return nil // a grant made before a Reset of the key: not the new state's
		}
		if e.fresh <= now {
			revive(e, a, now) // under another config: a fresh state, nothing to give back
		}
		before := cloneState(e.state)
		a.Refund(e.state, now, n, at)
		if before != nil && !reflect.DeepEqual(before, e.state) {
			sh.refreshed(e, a, now)
		}
	}
	return nil
}

// refreshed moves the fresh instant of e, whose state a refund at now just wrote under a,
// to when that state is fresh, as the Lua refund sets the key's TTL: the refund may have
// moved the state's timestamps to now, past the instant of its last grant, and forgetting
// it earlier would let a clock stepping back admit again (Redis keeps it). The instant is
// the ResetAfter of a request that can never be granted, which writes nothing; it is read
// from a copy, so no algorithm's probe can touch the state.
func (sh *shard) refreshed(e *entry, a algo.Algorithm, now int64) {
	probe := cloneState(e.state)
	if probe == nil {
		return
	}
	d := a.Apply(probe, now, algo.Request{N: math.MaxInt64})
	e.fresh = freshAt(now, d)
	sh.wrote(e, a)
}

// evictSample is how many held entries a new key examines for idle ones when its shard is
// full: a bounded sample, as Redis samples keys for its approximated LRU, so a full store
// inserts at about the cost of an unbounded one instead of scanning.
const evictSample = 16

// insert returns the entry that decides key under slot (h is the hash of key), which has
// none, or nil when the key must be denied. It is called with sh.mu held.
//
// A full shard first drops the idle entries of a sample (see evictSample). Only idle
// entries, whose state equals a fresh one, are ever dropped: forgetting any other state
// would hand its key back permits it already used. If none of the sample is idle, the key
// gets no entry of its own (see WithMaxKeys): it is decided by the shard's overflow state
// for slot, shared by all such keys, when a's states are overflowSafe; otherwise insert
// returns nil and soon, the earliest instant (µs) at which a sampled entry becomes idle.
//
// While an overflow state is not fresh, a new entry under its slot starts as a copy of it
// rather than fresh, since its key may have been decided by it before: an entry never
// starts more permissive than the state that last decided its key. The returned entry is
// an overflow state when it is in no table (see entry.overflow).
func (s *Store) insert(sh *shard, h uint64, key, slot string, a algo.Algorithm, now int64) (e *entry, soon int64) {
	var ov *entry
	if s.perMax > 0 {
		ov = sh.overflowState(slot, now)
	}
	if s.perMax > 0 && sh.n >= s.perMax {
		soon = sh.evictIdle(now, evictSample, key)
	}
	if s.perMax > 0 && sh.n >= s.perMax {
		sh.overflows++
		if ov != nil {
			return ov, 0
		}
		if !overflowSafe(a) {
			return nil, soon
		}
		st := a.NewState()
		if sh.over == nil {
			sh.over = make(map[string]*entry)
		}
		ov = &entry{state: st, fresh: now}
		sh.over[slot] = ov
		return ov, 0
	}
	if ov == nil {
		e = newEntry(key, a, now)
	} else {
		st := cloneState(ov.state)
		if st == nil {
			sh.overflows++ // a state that cannot be copied: the overflow state keeps deciding
			return ov, 0
		}
		e = &entry{key: key, state: st, fresh: ov.fresh}
	}
	sh.add(h, slot, e)
	return e, 0
}

// newEntry returns a new entry of key, fresh at now, holding a's fresh state.
func newEntry(key string, a algo.Algorithm, now int64) *entry {
	return &entry{key: key, state: a.NewState(), fresh: now}
}

// overflowSafe reports whether a's fresh state may serve as an overflow state
// (algo.OverflowSafe): under a, a state that has granted more (since it was fresh) is never
// more permissive than one that granted less, and a fresh state is the most permissive. A
// shared state then decides any of its keys at least as strictly as the key's own state
// would. Guava's smooth limiters are not such: a fresh key starts empty (SmoothBursty) or
// cold (SmoothWarmingUp), the slowest it can be, while a state shared for a while has
// stored permits or warmed up.
func overflowSafe(a algo.Algorithm) bool {
	return algo.CapabilitiesOf(a)&algo.OverflowSafe != 0
}

// fullDenial turns d, a's decision for a fresh key at now, into the decision for a new key
// denied because its shard is full of keys still limiting (insert returned nil): denied,
// retrying at soon (µs), when room may come free (math.MaxInt64: never), unless the
// request can never be granted anyway.
func fullDenial(d algo.Decision, now, soon int64) algo.Decision {
	switch {
	case soon == math.MaxInt64: // the sample held only this key's own states: no room ever
		d.RetryAfter = algo.Never
	case d.RetryAfter != algo.Never:
		d.RetryAfter = time.Duration(min(max(soon-now, 1), algo.MaxMicros)) * time.Microsecond
	}
	d.Allowed, d.Remaining, d.Wait, d.At, d.ResetAfter = false, 0, 0, 0, 0
	return d
}

// overflowState returns the shard's overflow state for slot, or nil when there is none or
// it is fresh again (then it is dropped). It is called with sh.mu held.
func (sh *shard) overflowState(slot string, now int64) *entry {
	ov := sh.over[slot]
	if ov != nil && ov.fresh <= now {
		delete(sh.over, slot)
		return nil
	}
	return ov
}

// overflow reports whether e is an overflow state. Its key is empty, which no user key is
// (storecheck.Apply rejects it).
func (e *entry) overflow() bool { return e.key == "" }

// Overflows returns how many requests of new keys found the store full, with no idle key
// to evict, since New: each was decided by an overflow state or denied (see WithMaxKeys).
// A growing count means WithMaxKeys is too small for the keys in use, or a flood of new
// keys.
func (s *Store) Overflows() uint64 {
	return s.sumShards(func(sh *shard) uint64 { return sh.overflows })
}

// Len returns the number of keys held (a key under two algorithm slots counts twice).
func (s *Store) Len() int {
	return int(s.sumShards(func(sh *shard) uint64 { return uint64(sh.n) }))
}

// sumShards adds up f over the shards, reading each under its lock.
func (s *Store) sumShards(f func(sh *shard) uint64) uint64 {
	var n uint64
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += f(sh)
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
