package local

import (
	"sync"
	"sync/atomic"

	"github.com/ratekit/limiter/internal/resetmark"
)

// marks are the marks the Resets left (package resetmark): a Refund of a grant made
// before a Reset of its key and slot is dropped while the mark lasts. Resets are rare, so
// one map under its own lock serves the whole store; it is read by Refund and Reset only,
// each holding its key's shard lock first, and emptied of ended marks by Sweep, and by put
// whenever the map has doubled since it was last emptied (a store without its sweeper,
// resetting ever new keys, keeps the live marks and a bounded number of ended ones).
type marks struct {
	mu   sync.Mutex
	m    map[markKey]resetmark.Mark
	held atomic.Int64 // len(m): a refund on a store that holds no mark takes no lock
	next int          // put forgets the ended marks when len(m) reaches it
}

// minSweep is the smallest map put empties of its ended marks.
const minSweep = 1024

type markKey struct{ key, slot string }

// put leaves m on key's state under slot, keeping what an earlier mark still drops.
func (ms *marks) put(key, slot string, m resetmark.Mark) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if len(ms.m) >= max(ms.next, minSweep) {
		ms.forget(m.At) // the Reset's instant: now
		ms.next = 2 * len(ms.m)
	}
	k := markKey{key, slot}
	if old, ok := ms.m[k]; ok {
		m = m.Merge(old)
	} else if ms.m == nil {
		ms.m = make(map[markKey]resetmark.Mark)
	}
	ms.m[k] = m
	ms.held.Store(int64(len(ms.m)))
}

// drops reports whether a mark on key's state under slot drops, at now, the refund of a
// grant acting at at.
func (ms *marks) drops(key, slot string, now, at int64) bool {
	if ms.held.Load() == 0 {
		return false
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	m, ok := ms.m[markKey{key, slot}]
	return ok && m.Drops(now, at)
}

// sweep forgets the marks that have ended at now.
func (ms *marks) sweep(now int64) {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	ms.forget(now)
}

// forget deletes the marks that have ended at now; ms is locked.
func (ms *marks) forget(now int64) {
	for k, m := range ms.m {
		if !m.Live(now) {
			delete(ms.m, k)
		}
	}
	ms.held.Store(int64(len(ms.m)))
}
