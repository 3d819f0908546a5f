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
	s.marks.sweep(s.now())
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

// sweep examines up to limit entries (from a random place) and removes the idle ones. It
// is called with sh.mu held.
func (sh *shard) sweep(now int64, limit int) (seen, removed int) {
	sh.sample(limit, "", func(t *table, e *entry) {
		seen++
		e.mu.Lock()
		if e.fresh <= now {
			sh.removeLocked(t.slot, e)
			removed++
		}
		e.mu.Unlock()
	})
	return seen, removed
}

// evictIdle removes the idle entries among a sample of up to limit entries and returns the
// earliest instant (µs) at which one of the others becomes idle (math.MaxInt64 if none).
// It leaves the entries of keep alone: those of the key being inserted, which ApplyAll
// holds on to. It is called with sh.mu held.
func (sh *shard) evictIdle(now int64, limit int, keep string) (soon int64) {
	soon = math.MaxInt64
	sh.sample(limit, keep, func(t *table, e *entry) {
		e.mu.Lock()
		if e.fresh <= now {
			sh.removeLocked(t.slot, e)
		} else {
			soon = min(soon, e.fresh)
		}
		e.mu.Unlock()
	})
	return soon
}

// sample calls f on up to limit entries of the shard's tables, skipping those of the key
// skip, each table from a random place. f may remove the entry it is given. It is called
// with sh.mu held.
func (sh *shard) sample(limit int, skip string, f func(t *table, e *entry)) {
	seen := 0
	for t := range sh.tables {
		t.each(func(e *entry) bool {
			if seen == limit {
				return false
			}
			if e.key != skip {
				seen++
				f(t, e)
			}
			return true
		})
		if seen == limit {
			return
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
