// Package semstate holds the state of one counting semaphore (algo.Semaphore): the Go
// reference that the local store runs and the conformance suite checks the stores against,
// twin of algo's semaphore.lua. It is internal so that package algo exports the config
// alone.
package semstate

import (
	"sort"
	"time"

	"github.com/ratekit/limiter/algo"
)

// State is the state of one semaphore: its holders, each with the instant its
// lease expires, and, for a fair semaphore, the queue of waiters, each with its ticket and
// the instant its place expires. It is the Go reference of the Redis script returned by
// algo.Semaphore's Script: both take the same decisions, and the local store runs it under
// a lock. The zero value is not usable; create one with [New]. A State is not safe for
// concurrent use.
//
// Instants are microseconds since the Unix epoch, supplied by the store. A lease or a queue
// place is live while now < its expiry. Every method first forgets the holders and
// waiters whose expiry has passed. Time going backwards keeps every lease alive (nothing is
// created) and renewals never shorten a lease.
type State struct {
	holders map[string]int64 // token → lease expiry
	soonest int64            // earliest lease expiry, valid unless dirty
	dirty   bool             // soonest must be recomputed
	queue   []semWaiter      // fair waiters, by ticket
	queued  map[string]int64 // token → ticket
	qSoon   int64            // earliest queue expiry, valid unless qDirty
	qDirty  bool
	ticket  int64 // last ticket handed out; 0 again once the queue is empty
	latest  int64 // an upper bound of every expiry held
}

type semWaiter struct {
	token  string
	ticket int64
	expiry int64
}

// New returns the state of a semaphore nobody holds.
func New() *State {
	return &State{holders: make(map[string]int64), queued: make(map[string]int64)}
}

// Acquire tries once to grant token a permit at now under c.
//
// A token that already holds a live lease is granted again and its lease is extended to
// now + LeaseTTL (never shortened): a retried call whose reply was lost does not take a
// second permit. Otherwise, a non-fair semaphore grants when fewer than Permits leases
// are live. A fair one grants when the waiters queued ahead of token (all of them, if
// token is not queued) are fewer than the free permits, so nobody overtakes a live
// waiter; when it does not grant and queueTTL > 0, token keeps (or takes, with a new
// ticket at the back) its place until now + queueTTL, and when queueTTL ≤ 0 token is
// not left in the queue. A granted token leaves the queue.
func (s *State) Acquire(c algo.Semaphore, now int64, token string, queueTTL time.Duration) algo.SemaphoreResult {
	s.expire(now)
	exp := now + micros(c.LeaseTTL)
	if cur, ok := s.holders[token]; ok {
		s.setLease(token, max(cur, exp))
		s.leave(token)
		return algo.SemaphoreResult{Acquired: true, Holders: int64(len(s.holders))}
	}
	held := int64(len(s.holders))
	free := c.Permits - held
	var rank int64
	ticket, queued := s.queued[token]
	if c.Fair {
		if queued {
			rank = int64(s.rank(ticket))
		} else {
			rank = int64(len(s.queue))
		}
	}
	if rank < free {
		s.setLease(token, exp)
		s.leave(token)
		return algo.SemaphoreResult{Acquired: true, Holders: held + 1}
	}
	if c.Fair {
		if q := queueMicros(queueTTL); q > 0 {
			s.wait(token, now+q)
		} else {
			s.leave(token)
		}
	}
	r := algo.SemaphoreResult{Holders: held, Position: rank}
	if held > 0 {
		r.RetryAfter = toDuration(s.earliest() - now)
	}
	return r
}

// Release gives back token's permit and removes token from the fair queue. It reports
// whether token held a live lease; releasing an expired lease, or a token that holds
// nothing, changes nothing else and reports false.
func (s *State) Release(now int64, token string) bool {
	s.expire(now)
	s.leave(token)
	if _, ok := s.holders[token]; !ok {
		return false
	}
	s.dropLease(token)
	return true
}

// Renew extends token's live lease to now + c.LeaseTTL (never shortening it) and reports
// true; it reports false, changing nothing, when token holds no live lease. A lease that
// has expired cannot be renewed, even if nobody took the permit since: the state cannot
// tell whether another holder came and went in between, so a renewal would hide a moment
// at which more than Permits holders may have worked at once.
func (s *State) Renew(c algo.Semaphore, now int64, token string) bool {
	s.expire(now)
	cur, ok := s.holders[token]
	if !ok {
		return false
	}
	s.setLease(token, max(cur, now+micros(c.LeaseTTL)))
	return true
}

// Holders returns the number of live leases at now.
func (s *State) Holders(now int64) int64 {
	s.expire(now)
	return int64(len(s.holders))
}

// IdleAt returns the instant from which the state equals a fresh one if nothing else
// happens: when every lease and queue place has expired (an upper bound, exact after a
// call that left the state empty, which returns 0). Stores forget the state then.
func (s *State) IdleAt() int64 {
	if len(s.holders) == 0 && len(s.queue) == 0 {
		return 0
	}
	return s.latest
}

// expire forgets the leases and queue places whose expiry is ≤ now. It scans only when
// the earliest expiry has passed, so a call on a busy semaphore costs O(1) here.
func (s *State) expire(now int64) {
	if len(s.holders) > 0 && s.earliest() <= now {
		for t, e := range s.holders {
			if e <= now {
				delete(s.holders, t)
			}
		}
		s.dirty = true
	}
	if len(s.queue) > 0 && s.queueEarliest() <= now {
		kept := s.queue[:0]
		for _, w := range s.queue {
			if w.expiry > now {
				kept = append(kept, w)
			} else {
				delete(s.queued, w.token)
			}
		}
		clear(s.queue[len(kept):])
		s.queue = kept
		s.qDirty = true
	}
	if len(s.queue) == 0 {
		s.ticket = 0
	}
}

// earliest returns the earliest lease expiry; there must be a holder.
func (s *State) earliest() int64 {
	if s.dirty {
		first := true
		for _, e := range s.holders {
			if first || e < s.soonest {
				s.soonest, first = e, false
			}
		}
		s.dirty = false
	}
	return s.soonest
}

// queueEarliest returns the earliest queue expiry; the queue must not be empty.
func (s *State) queueEarliest() int64 {
	if s.qDirty {
		s.qSoon = s.queue[0].expiry
		for _, w := range s.queue[1:] {
			s.qSoon = min(s.qSoon, w.expiry)
		}
		s.qDirty = false
	}
	return s.qSoon
}

func (s *State) setLease(token string, exp int64) {
	old, had := s.holders[token]
	s.holders[token] = exp
	switch {
	case len(s.holders) == 1:
		s.soonest, s.dirty = exp, false
	case had && old == s.soonest && exp != old:
		s.dirty = true // the earliest lease moved later
	case !s.dirty && exp < s.soonest:
		s.soonest = exp
	}
	s.latest = max(s.latest, exp)
}

func (s *State) dropLease(token string) {
	if s.holders[token] == s.soonest {
		s.dirty = true
	}
	delete(s.holders, token)
}

// rank is the index of ticket in the queue.
func (s *State) rank(ticket int64) int {
	return sort.Search(len(s.queue), func(i int) bool { return s.queue[i].ticket >= ticket })
}

// wait keeps token in the queue until exp (never earlier than before), giving it the
// next ticket if it is not queued yet.
func (s *State) wait(token string, exp int64) {
	if ticket, ok := s.queued[token]; ok {
		w := &s.queue[s.rank(ticket)]
		if w.expiry == s.qSoon && exp > w.expiry {
			s.qDirty = true
		}
		w.expiry = max(w.expiry, exp)
		s.latest = max(s.latest, w.expiry)
		return
	}
	s.ticket++
	s.queued[token] = s.ticket
	s.queue = append(s.queue, semWaiter{token: token, ticket: s.ticket, expiry: exp})
	switch {
	case len(s.queue) == 1:
		s.qSoon, s.qDirty = exp, false
	case !s.qDirty && exp < s.qSoon:
		s.qSoon = exp
	}
	s.latest = max(s.latest, exp)
}

// leave removes token from the queue, if it is there.
func (s *State) leave(token string) {
	ticket, ok := s.queued[token]
	if !ok {
		return
	}
	i := s.rank(ticket)
	if s.queue[i].expiry == s.qSoon {
		s.qDirty = true
	}
	copy(s.queue[i:], s.queue[i+1:])
	s.queue[len(s.queue)-1] = semWaiter{}
	s.queue = s.queue[:len(s.queue)-1]
	delete(s.queued, token)
	if len(s.queue) == 0 {
		s.ticket = 0
	}
}

// queueMicros converts a queue TTL to whole µs, clamped to [0, algo.MaxMicros].
func queueMicros(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return min(int64(d/time.Microsecond), algo.MaxMicros)
}

// micros converts d to whole µs.
func micros(d time.Duration) int64 { return int64(d / time.Microsecond) }

// toDuration converts a span in µs to a Duration: 0 when not positive, algo.Never from
// algo.MaxMicros on.
func toDuration(us int64) time.Duration {
	if us >= algo.MaxMicros {
		return algo.Never
	}
	if us <= 0 {
		return 0
	}
	return time.Duration(us) * time.Microsecond
}
