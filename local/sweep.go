package local

import (
	"math"
	"time"
)

// sweepBatch bounds how many entries one shard visit examines, so a sweep never holds a
// shard's lock for long whatever the number of keys.
const sweepBatch = 256

// sweeper removes idle entries every interval until Close.
func (s *Store) sweeper(interval time.Duration) {
	defer s.stopped.Done()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.Sweep()
		}
	}
}

// Sweep removes entries whose state is fresh again, examining a bounded sample of each
// shard and repeating on a shard while more than a quarter of its sample was idle (the
// approach Redis takes for expiring keys). The background sweeper calls it; tests and
// callers with their own scheduling may call it directly.
func (s *Store) Sweep() {
	for i := range s.shards {
		sh := &s.shards[i]
		for {
			sh.mu.Lock()
			now := s.now()
			seen, removed := sh.sweep(now, sweepBatch)
			sh.sweepOverflow(now)
			sh.mu.Unlock()
			if seen < sweepBatch || removed*4 <= seen {
				break
			}
		}
	}
}

// sweep examines up to limit entries (map iteration starts at a random place) and removes
// the idle ones. It is called with sh.mu held.
func (sh *shard) sweep(now int64, limit int) (seen, removed int) {
	sh.sample(limit, "", func(t *table, h uint64, e *entry) {
		seen++
		if e.fresh <= now {
			sh.remove(h, t.slot, e) // the map may be changed while ranging over it
			removed++
		}
	})
	return seen, removed
}

// evictIdle removes the idle entries among a sample of up to limit entries and returns the
// earliest instant (µs) at which one of the others becomes idle (math.MaxInt64 if none).
// It leaves the entries of keep alone: those of the key being inserted, which ApplyAll
// holds on to. It is called with sh.mu held.
func (sh *shard) evictIdle(now int64, limit int, keep string) (soon int64) {
	soon = math.MaxInt64
	sh.sample(limit, keep, func(t *table, h uint64, e *entry) {
		if e.fresh <= now {
			sh.remove(h, t.slot, e) // the map may be changed while ranging over it
		} else {
			soon = min(soon, e.fresh)
		}
	})
	return soon
}

// sample calls f on up to limit entries of the shard's tables, skipping those of the key
// skip, each table's map from a random place (Go's map iteration), then its collisions
// (whose hash f does not need: remove finds them by key). f may remove the entry it is
// given. It is called with sh.mu held.
func (sh *shard) sample(limit int, skip string, f func(t *table, h uint64, e *entry)) {
	seen := 0
	for t := range sh.tables {
		for h, e := range t.m {
			if seen == limit {
				return
			}
			if e.key != skip {
				seen++
				f(t, h, e)
			}
		}
		for _, e := range t.coll {
			if seen == limit {
				return
			}
			if e.key != skip {
				seen++
				f(t, 0, e)
			}
		}
	}
}

// sweepOverflow drops the overflow states that are fresh again. It is called with sh.mu
// held.
func (sh *shard) sweepOverflow(now int64) {
	for slot, e := range sh.over {
		if e.fresh <= now {
			delete(sh.over, slot)
		}
	}
}
