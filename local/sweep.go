package local

import (
	"time"

	"github.com/ratekit/limiter/algo"
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
	for k, e := range sh.m {
		if seen == limit {
			break
		}
		seen++
		if e.fresh <= now {
			delete(sh.m, k)
			removed++
		}
	}
	return seen, removed
}

// evictNearestFresh removes, among a sample of entries, the one whose state becomes fresh
// soonest: dropping it loses the fewest remembered grants. It is called with sh.mu held.
func (sh *shard) evictNearestFresh(sample int) {
	var victim slotKey
	best, seen := int64(0), 0
	for k, e := range sh.m {
		if _, ok := e.state.(*algo.SemaphoreState); ok {
			continue // live leases must never be forgotten: that would admit extra holders
		}
		if seen == 0 || e.fresh < best {
			victim, best = k, e.fresh
		}
		seen++
		if seen == sample {
			break
		}
	}
	if seen > 0 {
		delete(sh.m, victim)
	}
}
