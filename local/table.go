package local

import (
	"reflect"
	"unique"

	"github.com/ratekit/limiter/algo"
)

// table holds a shard's entries of one algorithm slot, keyed by the 64-bit hash of the
// user key (the hash that also picked the shard, so a call hashes its key once). A shard
// has one table per slot in use, usually one, so an entry needs to name neither its slot
// nor a next entry: a key whose hash another key's entry already holds in m (a 64-bit
// collision, which only a forged test produces in practice) goes to coll, by key.
type table struct {
	slot string
	m    map[uint64]*entry
	coll map[string]*entry // nil until a collision
}

// entry is one state: a user key under the slot of its table. At 48 bytes (a size class
// of its own) it is what a tracked key costs beside its state and its map slot.
type entry struct {
	key   string
	state algo.State
	fresh int64  // µs at which state equals a fresh one under cfg; the entry can go then
	cfg   config // the config of the state's last write; zero: never written
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

// isTokenBucket is is(c, tb) for a token bucket, with no call: the configs' fields are
// compared directly.
func isTokenBucket(c config, tb algo.TokenBucket) bool {
	if c == (config{}) {
		return false
	}
	x, ok := c.Value().a.(algo.TokenBucket)
	return ok && x == tb
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
	if sh.first.slot == slot && sh.first.m != nil {
		return &sh.first
	}
	for _, t := range sh.more {
		if t.slot == slot {
			return t
		}
	}
	return nil
}

// tables yields the shard's tables.
func (sh *shard) tables(yield func(*table) bool) {
	if sh.first.m == nil || !yield(&sh.first) {
		return
	}
	for _, t := range sh.more {
		if !yield(t) {
			return
		}
	}
}

// find returns the entry of key under slot, or nil. h is the hash of key.
func (sh *shard) find(h uint64, key, slot string) *entry {
	if t := sh.table(slot); t != nil {
		return t.find(h, key)
	}
	return nil
}

func (t *table) find(h uint64, key string) *entry {
	if e := t.m[h]; e != nil && e.key == key {
		return e
	}
	if t.coll != nil {
		return t.coll[key]
	}
	return nil
}

// add puts e, which must be new, under slot; h is the hash of its key.
func (sh *shard) add(h uint64, slot string, e *entry) {
	t := sh.table(slot)
	switch {
	case t != nil:
	case sh.first.m == nil:
		sh.first = table{slot: slot, m: make(map[uint64]*entry)}
		t = &sh.first
	default:
		t = &table{slot: slot, m: make(map[uint64]*entry)}
		sh.more = append(sh.more, t)
	}
	if t.m[h] == nil {
		t.m[h] = e
	} else {
		if t.coll == nil {
			t.coll = make(map[string]*entry)
		}
		t.coll[e.key] = e
	}
	sh.n++
}

// remove takes e out of slot's table; h is the hash of its key. It does nothing if e is
// not there.
func (sh *shard) remove(h uint64, slot string, e *entry) {
	if t := sh.table(slot); t != nil && t.remove(h, e) {
		sh.n--
	}
}

func (t *table) remove(h uint64, e *entry) bool {
	switch {
	case t.m[h] == e:
		delete(t.m, h)
	case t.coll != nil && t.coll[e.key] == e:
		delete(t.coll, e.key)
	default:
		return false
	}
	return true
}
