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
	for h, e := range sh.m {
		for e != nil && seen < limit {
			next := e.next
			seen++
			if e.fresh <= now {
				sh.remove(h, e) // the map may be changed while ranging over it
				removed++
			}
			e = next
		}
		if seen == limit {
			break
		}
	}
	return seen, removed
}

// evictNearestFresh removes, among a sample of entries, the one whose state becomes fresh
// soonest: dropping it loses the fewest remembered grants. It is called with sh.mu held.
func (sh *shard) evictNearestFresh(sample int) {
	var victim *entry
	var victimHash uint64
	seen := 0
	for h, e := range sh.m {
		for ; e != nil && seen < sample; e = e.next {
			if _, ok := e.state.(*algo.SemaphoreState); ok {
				continue // live leases must never be forgotten: that would admit extra holders
			}
			if victim == nil || e.fresh < victim.fresh {
				victim, victimHash = e, h
			}
			seen++
		}
		if seen == sample {
			break
		}
	}
	if victim != nil {
		sh.remove(victimHash, victim)
	}
}
