package algo

import (
	_ "embed" // the Lua twin of SemaphoreState
	"fmt"
	"sort"
	"time"
)

// Semaphore is the configuration of a counting semaphore with leases: at most Permits
// holders at once, each holding its permit for LeaseTTL unless it renews or releases it
// first. It is not an [Algorithm] (it has no rate); stores that implement
// store.SemaphoreStore host it, and semaphore.New validates it.
//
// A holder that crashes keeps its permit only until its lease expires, LeaseTTL after it
// was granted or last renewed: no process has to notice the crash. Fair selects how free
// permits are handed out when several acquirers wait: false grants whoever asks first once
// a permit is free (cheapest, no queue, a waiter may starve under contention); true queues
// the waiters in arrival order, by a ticket taken from a counter on the store (never by
// client clocks), and grants in ticket order.
type Semaphore struct {
	// Permits is how many holders the semaphore admits at once, in [1, 2^53].
	Permits int64
	// LeaseTTL is how long a grant or a renewal keeps the permit: at least 1 ms (the
	// resolution of Redis key expiry), a whole number of microseconds, at most MaxMicros µs.
	LeaseTTL time.Duration
	// Fair grants in arrival order when true; see the type's documentation.
	Fair bool
}

// Validate reports, wrapping ErrInvalidConfig, which field makes the config unusable.
func (c Semaphore) Validate() error {
	if err := checkCount("Semaphore.Permits", c.Permits); err != nil {
		return err
	}
	if c.LeaseTTL < time.Millisecond {
		return fmt.Errorf("%w: Semaphore.LeaseTTL must be at least 1ms, got %v", ErrInvalidConfig, c.LeaseTTL)
	}
	if c.LeaseTTL%time.Microsecond != 0 {
		return fmt.Errorf("%w: Semaphore.LeaseTTL must be a whole number of microseconds, got %v",
			ErrInvalidConfig, c.LeaseTTL)
	}
	if c.LeaseTTL/time.Microsecond > time.Duration(MaxMicros) {
		return fmt.Errorf("%w: Semaphore.LeaseTTL must be at most %d µs, got %v", ErrInvalidConfig, MaxMicros, c.LeaseTTL)
	}
	return nil
}

// SemaphoreResult is the answer to one acquire attempt.
//
// Holders is the number of live holders after the attempt (the acquirer included when
// Acquired). Position is, for a fair semaphore that did not grant, the number of waiters
// queued ahead of the acquirer (0: it is next in line); it is 0 otherwise. RetryAfter is,
// when not Acquired, the time until the earliest live lease expires, the latest moment a
// permit can come free without a Release or a Renew (0 when no lease is held: a fair
// acquirer then waits for the waiters ahead of it); it is 0 when Acquired.
type SemaphoreResult struct {
	Acquired   bool
	Holders    int64
	Position   int64
	RetryAfter time.Duration
}

// SemaphoreState is the state of one semaphore: its holders, each with the instant its
// lease expires, and, for a fair semaphore, the queue of waiters, each with its ticket and
// the instant its place expires. It is the Go reference of the Redis script returned by
// [Semaphore.Script]: both take the same decisions, and the local store runs it under a
// lock. The zero value is not usable; create one with [NewSemaphoreState]. A
// SemaphoreState is not safe for concurrent use.
//
// Instants are microseconds since the Unix epoch, supplied by the store. A lease or a queue
// place is live while now < its expiry. Every method first forgets the holders and
// waiters whose expiry has passed. Time going backwards keeps every lease alive (nothing is
// created) and renewals never shorten a lease.
type SemaphoreState struct {
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

// NewSemaphoreState returns the state of a semaphore nobody holds.
func NewSemaphoreState() *SemaphoreState {
	return &SemaphoreState{holders: make(map[string]int64), queued: make(map[string]int64)}
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
func (s *SemaphoreState) Acquire(c Semaphore, now int64, token string, queueTTL time.Duration) SemaphoreResult {
	s.expire(now)
	exp := now + micros(c.LeaseTTL)
	if cur, ok := s.holders[token]; ok {
		s.setLease(token, max(cur, exp))
		s.leave(token)
		return SemaphoreResult{Acquired: true, Holders: int64(len(s.holders))}
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
		return SemaphoreResult{Acquired: true, Holders: held + 1}
	}
	if c.Fair {
		if q := queueMicros(queueTTL); q > 0 {
			s.wait(token, now+q)
		} else {
			s.leave(token)
		}
	}
	r := SemaphoreResult{Holders: held, Position: rank}
	if held > 0 {
		r.RetryAfter = toDuration(s.earliest() - now)
	}
	return r
}

// Release gives back token's permit and removes token from the fair queue. It reports
// whether token held a live lease; releasing an expired lease, or a token that holds
// nothing, changes nothing else and reports false.
func (s *SemaphoreState) Release(now int64, token string) bool {
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
func (s *SemaphoreState) Renew(c Semaphore, now int64, token string) bool {
	s.expire(now)
	cur, ok := s.holders[token]
	if !ok {
		return false
	}
	s.setLease(token, max(cur, now+micros(c.LeaseTTL)))
	return true
}

// Holders returns the number of live leases at now.
func (s *SemaphoreState) Holders(now int64) int64 {
	s.expire(now)
	return int64(len(s.holders))
}

// IdleAt returns the instant from which the state equals a fresh one if nothing else
// happens: when every lease and queue place has expired (an upper bound, exact after a
// call that left the state empty, which returns 0). Stores forget the state then.
func (s *SemaphoreState) IdleAt() int64 {
	if len(s.holders) == 0 && len(s.queue) == 0 {
		return 0
	}
	return s.latest
}

// expire forgets the leases and queue places whose expiry is ≤ now. It scans only when
// the earliest expiry has passed, so a call on a busy semaphore costs O(1) here.
func (s *SemaphoreState) expire(now int64) {
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
func (s *SemaphoreState) earliest() int64 {
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
func (s *SemaphoreState) queueEarliest() int64 {
	if s.qDirty {
		s.qSoon = s.queue[0].expiry
		for _, w := range s.queue[1:] {
			s.qSoon = min(s.qSoon, w.expiry)
		}
		s.qDirty = false
	}
	return s.qSoon
}

func (s *SemaphoreState) setLease(token string, exp int64) {
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

func (s *SemaphoreState) dropLease(token string) {
	if s.holders[token] == s.soonest {
		s.dirty = true
	}
	delete(s.holders, token)
}

// rank is the index of ticket in the queue.
func (s *SemaphoreState) rank(ticket int64) int {
	return sort.Search(len(s.queue), func(i int) bool { return s.queue[i].ticket >= ticket })
}

// wait keeps token in the queue until exp (never earlier than before), giving it the
// next ticket if it is not queued yet.
func (s *SemaphoreState) wait(token string, exp int64) {
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
func (s *SemaphoreState) leave(token string) {
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

// queueMicros converts a queue TTL to whole µs, clamped to [0, MaxMicros].
func queueMicros(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return min(int64(d/time.Microsecond), MaxMicros)
}

// semaphoreLua is the Lua twin of SemaphoreState.
//
//go:embed semaphore.lua
var semaphoreLua string

var semaphoreScript = newBaseScript("semaphore", semaphoreLua, ":q", ":qe", ":n")

// Script returns the Lua twin of [SemaphoreState], run by the Redis store. It keeps four
// keys, the base key followed by each of Keys ("<base>", "<base>:q", "<base>:qe",
// "<base>:n"), all of which must share one Cluster hash tag:
//
//	KEYS[1]  sorted set: holder token → lease expiry (µs)
//	KEYS[2]  sorted set: waiter token → ticket (fair queue)
//	KEYS[3]  sorted set: waiter token → queue place expiry (µs)
//	KEYS[4]  string: the last ticket handed out (INCR)
//	ARGV[1]  "acquire", "release", "renew" or "holders"
//	ARGV[2]  now in µs since the Unix epoch, or "" to read the server's TIME, or "now pad"
//	         (every TTL set gets pad µs more)
//	ARGV[3]  the owner token ("" for holders)
//	ARGV[4]  acquire: the queue TTL in µs (0: do not queue)
//	ARGV[5..] the config, as appended by AppendArgs: Permits, LeaseTTL in µs, Fair (0/1)
//
// "acquire" replies {acquired (0/1), holders, position, retry_after_us}; "release" and
// "renew" reply 1 when the token held a live lease, else 0; "holders" replies the count.
// Every write sets each written key's PEXPIRE to its latest expiry (at least 2 ms), and
// an empty queue deletes its three keys.
func (Semaphore) Script() *Script { return semaphoreScript }

// AppendArgs appends Permits, LeaseTTL in µs and Fair (1 or 0), the config arguments the
// script reads from ARGV[5] on.
func (c Semaphore) AppendArgs(args []any) []any {
	fair := 0
	if c.Fair {
		fair = 1
	}
	return append(args, c.Permits, micros(c.LeaseTTL), fair)
}
