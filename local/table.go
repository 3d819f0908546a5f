package local

import (
	"math/bits"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"unique"

	"github.com/ratekit/limiter/algo"
)

// table holds a shard's entries of one algorithm slot, keyed by the 64-bit hash of the
// user key (the hash that also picked the shard, so a call hashes its key once), in an
// open-addressing hash table of groups of seven slots (tables), much as Go's maps
// lay theirs out, a group filling one cache line. Unlike a Go map, a lookup (find) may run without the shard's lock, so that
// calls on distinct keys write no memory they share (see Store.Apply): the table is
// changed only under the shard's lock, every slot is read and written atomically, and a
// table that must grow is copied and the copy published, the old one left as it was for
// the lookups still reading it. An entry taken out is marked dead under its own lock (see
// entry.mu), so a lookup that found it in an older table, or just before it went, sees
// that and goes the locked way. A key whose hash another key's entry already holds (a
// 64-bit collision, which only a forged test produces in practice) is simply the next
// match of the probe, told apart by key.
type table struct {
	slot string
	cur  atomic.Pointer[groups] // nil until the first entry; replaced when grown
	used int                    // slots holding an entry or a deletion mark, under the shard's lock
}

// entry is one state: a user key under the slot of its table. At 64 bytes (a size class
// of its own) it is what a tracked key costs beside its state and its slot.
//
// mu guards state, fresh and cfg: a call on the key holds it, and the shard's lock as
// well unless it found the entry without it (see Store.Apply); anything that takes the
// entry out of its table does so under both, and marks it dead (state nil) first. key
// and h never change.
type entry struct {
	key   string
	state algo.State // nil once the entry is dead (out of its table)
	fresh int64      // µs at which state equals a fresh one under cfg; the entry can go then
	cfg   config     // the config of the state's last write; zero: never written
	h     uint64     // the hash of key
	mu    sync.Mutex
}

// groups is one table's array of groups: a power of two of them, probed from the group
// the hash picks, one group further, then two, ... (a triangular sequence, which visits
// every group).
type groups struct {
	slot string // the table's, for a lookup that holds no lock
	g    []group
	mask uint64
}

// group is seven slots in 64 bytes, one cache line: their tags in the low seven bytes
// of one word (the top byte is unused, always 0), then their entries. A tag is tagEmpty,
// tagDeleted, or 0x80 | the hash's top seven bits for a slot that holds an entry (a
// lookup compares the entry's hash and key only where the tag matches).
type group struct {
	tags atomic.Uint64
	e    [groupSlots]atomic.Pointer[entry]
}

const (
	tagEmpty   = 0
	tagDeleted = 1
	groupSlots = 7
	lsb        = 0x0101010101010101
	msb        = 0x0080808080808080 // the top bit of each slot's tag byte
)

func tagOf(h uint64) uint64 { return h>>57 | 0x80 }

// home is the first group of h's probe: bits above those that picked the shard (at most
// 16, see maxShards).
func (gs *groups) home(h uint64) uint64 { return h >> 16 & gs.mask }

// zeroBytes marks, with its top bit, each slot's byte of w that is zero: exactly so up to
// the lowest one, maybe falsely above it (a borrow), which only a candidate tag match
// tolerates (its entry is compared); whether a slot's byte is zero at all is exact.
func zeroBytes(w uint64) uint64 { return (w - lsb) &^ w & msb }

// free marks the slots' bytes of w that are tagEmpty or tagDeleted: exactly.
func free(w uint64) uint64 { return ^w & msb }

// find returns the entry of key, whose hash is h, or nil. It takes no lock: the caller
// either holds the shard's lock, or checks that the entry it gets is alive under the
// entry's lock (and takes the locked way on nil).
func (t *table) find(h uint64, key string) *entry {
	if gs := t.cur.Load(); gs != nil {
		return gs.find(h, key)
	}
	return nil
}

func (gs *groups) find(h uint64, key string) *entry {
	if e := gs.candidate(h); e != nil && e.h == h && e.key == key {
		return e
	}
	return gs.probe(h, key)
}

// candidate is the entry of the first slot of h's first group whose tag is h's, or nil:
// nearly always the entry of h's key, if any (a tag matches by chance one time in 128 per
// slot held).
func (gs *groups) candidate(h uint64) *entry {
	g := &gs.g[gs.home(h)]
	if m := zeroBytes(g.tags.Load() ^ tagOf(h)*lsb); m != 0 {
		return g.e[bits.TrailingZeros64(m)>>3].Load()
	}
	return nil
}

// probe is find's whole search.
func (gs *groups) probe(h uint64, key string) *entry {
	tag := tagOf(h) * lsb
	for i, step := gs.home(h), uint64(1); ; i, step = (i+step)&gs.mask, step+1 {
		g := &gs.g[i]
		tags := g.tags.Load()
		for m := zeroBytes(tags ^ tag); m != 0; m &= m - 1 {
			if e := g.e[bits.TrailingZeros64(m)>>3].Load(); e != nil && e.h == h && e.key == key {
				return e
			}
		}
		if zeroBytes(tags) != 0 { // an empty slot: the key would be here
			return nil
		}
	}
}

// add puts e, whose key has no entry in t, into t, growing t first when three quarters of
// its slots are used. It is called with the shard's lock held.
func (t *table) add(e *entry) {
	gs := t.cur.Load()
	if gs == nil || (t.used+1)*4 > len(gs.g)*groupSlots*3 {
		gs = t.grow()
	}
	for i, step := gs.home(e.h), uint64(1); ; i, step = (i+step)&gs.mask, step+1 {
		g := &gs.g[i]
		tags := g.tags.Load()
		if m := free(tags); m != 0 {
			b := bits.TrailingZeros64(m) &^ 7 // the slot's byte
			if tags>>b&0xff == tagEmpty {
				t.used++
			}
			g.e[b>>3].Store(e) // the entry first: a lookup that sees the tag finds it
			g.tags.Store(tags&^(0xff<<b) | tagOf(e.h)<<b)
			return
		}
	}
}

// remove takes e out of t and reports whether it was there. It is called with the shard's
// lock held.
func (t *table) remove(e *entry) bool {
	gs := t.cur.Load()
	if gs == nil {
		return false
	}
	tag := tagOf(e.h) * lsb
	for i, step := gs.home(e.h), uint64(1); ; i, step = (i+step)&gs.mask, step+1 {
		g := &gs.g[i]
		tags := g.tags.Load()
		for m := zeroBytes(tags ^ tag); m != 0; m &= m - 1 {
			b := bits.TrailingZeros64(m) &^ 7
			if g.e[b>>3].Load() == e {
				g.tags.Store(tags&^(0xff<<b) | tagDeleted<<b)
				g.e[b>>3].Store(nil)
				return true
			}
		}
		if zeroBytes(tags) != 0 {
			return false
		}
	}
}

// grow publishes a copy of t's entries in a table of twice as many slots as they need
// (half full at most), dropping the deletion marks, and returns it. It is called with the
// shard's lock held.
func (t *table) grow() *groups {
	old := t.cur.Load()
	n := 1
	if old != nil {
		for i := range old.g {
			n += bits.OnesCount64(old.g[i].tags.Load() & msb)
		}
	}
	size := 1
	for size*groupSlots < 2*n {
		size <<= 1
	}
	gs := &groups{slot: t.slot, g: make([]group, size), mask: uint64(size - 1)}
	t.used = 0
	if old != nil {
		for i := range old.g {
			g := &old.g[i]
			for m := g.tags.Load() & msb; m != 0; m &= m - 1 {
				if e := g.e[bits.TrailingZeros64(m)>>3].Load(); e != nil {
					gs.put(e)
					t.used++
				}
			}
		}
	}
	t.cur.Store(gs)
	return gs
}

// put adds e to gs, not yet published: no lookup reads it.
func (gs *groups) put(e *entry) {
	for i, step := gs.home(e.h), uint64(1); ; i, step = (i+step)&gs.mask, step+1 {
		g := &gs.g[i]
		tags := g.tags.Load()
		if m := free(tags); m != 0 {
			b := bits.TrailingZeros64(m) &^ 7
			g.e[b>>3].Store(e)
			g.tags.Store(tags&^(0xff<<b) | tagOf(e.h)<<b)
			return
		}
	}
}

// each calls f on the entries of t, from a random group on, until f returns false. f may
// remove the entry it is given. It is called with the shard's lock held.
func (t *table) each(f func(e *entry) bool) {
	gs := t.cur.Load()
	if gs == nil {
		return
	}
	start := rand.Uint64()
	for k := range uint64(len(gs.g)) {
		g := &gs.g[(start+k)&gs.mask]
		for m := g.tags.Load() & msb; m != 0; m &= m - 1 {
			if e := g.e[bits.TrailingZeros64(m)>>3].Load(); e != nil && !f(e) {
				return
			}
		}
	}
}

// config is a config interned with package unique: one pointer per entry, where the
// algo.Algorithm interface took two words, and the same pointer for every entry written
// under one config. Interned values go when no entry refers to them any more. The zero
// config stands for "never written"; incomparable for a config that cannot be interned
// (a type that cannot be compared), which no other config equals.
type config = unique.Handle[configKey]

// configKey wraps the interned config: a nil a is the incomparable marker.
type configKey struct{ a algo.Algorithm }

var incomparable = unique.Make(configKey{})

// is reports whether c stands for a, the configs compared with ==; never for a config that
// cannot be compared (incomparable). It never panics: an interned config's value is
// comparable throughout, so comparing it with a value of its own type cannot panic, and
// values of two different types compare unequal without being looked at.
func is(c config, a algo.Algorithm) bool {
	return c != (config{}) && c.Value().a == a
}

// intern returns the config that stands for a. The shard remembers the last few, so that
// the first write of a new key, or keys of a few configs taking turns on one shard, cost a
// comparison or a few, not an intern lookup (whose comparability check allocates).
func (sh *shard) intern(a algo.Algorithm) config {
	for _, c := range sh.cfgs {
		if is(c, a) {
			return c
		}
	}
	c := incomparable
	// a's type first (no allocation), then the values its interfaces hold.
	if reflect.TypeOf(a).Comparable() && reflect.ValueOf(a).Comparable() {
		c = unique.Make(configKey{a})
	}
	copy(sh.cfgs[1:], sh.cfgs[:])
	sh.cfgs[0] = c
	return c
}

// wrote records that e's state was just written under a.
func (sh *shard) wrote(e *entry, a algo.Algorithm) {
	if !is(e.cfg, a) {
		e.cfg = sh.intern(a)
	}
}

// table returns the shard's table of slot, or nil.
func (sh *shard) table(slot string) *table {
	if sh.first.slot == slot && sh.first.cur.Load() != nil {
		return &sh.first
	}
	if more := sh.more.Load(); more != nil {
		for _, t := range *more {
			if t.slot == slot {
				return t
			}
		}
	}
	return nil
}

// lookup returns the entry of key under slot, or nil, taking no lock: the caller checks
// under the entry's lock that it is alive (see table). h is the hash of key.
func (sh *shard) lookup(h uint64, key, slot string) *entry {
	gs := sh.first.cur.Load()
	if gs != nil && gs.slot != slot {
		gs = sh.other(slot)
	}
	if gs == nil {
		return nil
	}
	return gs.find(h, key)
}

// other returns the entries of slot when the shard's first table is another slot's, or
// nil. It takes no lock (see table).
func (sh *shard) other(slot string) *groups {
	if more := sh.more.Load(); more != nil {
		for _, t := range *more {
			if gs := t.cur.Load(); gs != nil && gs.slot == slot {
				return gs
			}
		}
	}
	return nil
}

// tables yields the shard's tables.
func (sh *shard) tables(yield func(*table) bool) {
	if sh.first.cur.Load() == nil || !yield(&sh.first) {
		return
	}
	if more := sh.more.Load(); more != nil {
		for _, t := range *more {
			if !yield(t) {
				return
			}
		}
	}
}

// find returns the entry of key under slot, or nil. h is the hash of key. It is called
// with sh.mu held.
func (sh *shard) find(h uint64, key, slot string) *entry {
	if t := sh.table(slot); t != nil {
		return t.find(h, key)
	}
	return nil
}

// add puts e, which must be new, under slot; h is the hash of its key. It is called with
// sh.mu held.
func (sh *shard) add(h uint64, slot string, e *entry) {
	t := sh.table(slot)
	switch {
	case t != nil:
	case sh.first.cur.Load() == nil:
		sh.first.slot = slot
		t = &sh.first
	default:
		t = &table{slot: slot}
		var more []*table // a new slice: lookups may be reading the old one
		if old := sh.more.Load(); old != nil {
			more = append(more, *old...)
		}
		more = append(more, t)
		sh.more.Store(&more)
	}
	e.h = h
	t.add(e)
	sh.n++
}

// remove takes e out of slot's table, marking it dead; h is the hash of its key. It does
// nothing if e is not there. It is called with sh.mu held, and e.mu not.
func (sh *shard) remove(h uint64, slot string, e *entry) {
	e.mu.Lock()
	sh.removeLocked(slot, e)
	e.mu.Unlock()
}

// removeLocked is remove with e.mu held too.
func (sh *shard) removeLocked(slot string, e *entry) {
	if t := sh.table(slot); t != nil && t.remove(e) {
		e.state = nil
		sh.n--
	}
}
