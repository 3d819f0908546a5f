package algo

import (
	_ "embed" // the Lua twin
	"fmt"
	"slices"
	"time"
)

// SlidingWindowLog remembers the instant of every grant and admits a request only if the
// window of length Window ending at its instant holds at most Limit permits with it. It is
// exact (no window of length Window ever holds more than Limit, boundaries included) and
// costs memory proportional to the grants in the last Window, at most Limit entries per key.
//
// Windows are half-open on the left: a grant at t counts in (t-Window, t], so a grant
// exactly Window before now no longer counts. The log of a key holds at most 2^53 permits
// (reservations queued windows ahead could pile up more): a request that would exceed that
// is denied, with RetryAfter the time until enough entries have left the window. A reservation is placed at the earliest
// instant, not before the latest grant already logged (first come, first served), at which
// the window ending there has room. A charge ([Request].Charge) is logged as a grant with
// no wait is, whatever the window holds, and leaves the window as a grant does; entries
// before a run of entries that holds Limit alone are merged into it (no decision changes),
// so the log stays at most about Limit entries long.
type SlidingWindowLog struct {
	Limit  int64         // permits per sliding window, and the largest N; ≥ 1
	Window time.Duration // window length; a whole number of µs in [1µs, MaxMicros µs] (31.7 years)
}

// logEntry is one grant: N permits at T (µs). The Lua twin stores it as "T:N" in a list.
type logEntry struct {
	t, n int64
}

// slidingLogState mirrors the Lua twin's two keys: the list of entries (oldest first) and
// the hash field total, the sum of their N.
type slidingLogState struct {
	entries []logEntry // entries[head:] are live; the prefix is reused storage
	head    int
	total   int64
}

// logKeySuffix names the list that holds a sliding log's entries, beside its hash.
const logKeySuffix = ":log"

// slidingWindowLogLua is the Lua twin, run after prelude.lua (see Script).
//
//go:embed sliding_window_log.lua
var slidingWindowLogLua string

// The script is built once: Script returns the same pointer on every call, so a store can
// key its cache of loaded SHA1s by it. The slot names are interned (see slotCache).
var (
	slidingWindowLogScript = newScript(SlidingWindowLog{}.Name(), slidingWindowLogLua, logKeySuffix)
	slidingLogSlots        = slotCache{prefix: "sl:"}
)

// Compile-time checks: SlidingWindowLog has a Lua twin and a Quota, and its state copies itself.
var (
	_ Scripted    = SlidingWindowLog{}
	_ quoter      = SlidingWindowLog{}
	_ StateCloner = (*slidingLogState)(nil)
)

// Name returns "sliding-log".
func (SlidingWindowLog) Name() string { return "sliding-log" }

// Slot returns "sl:<window in µs>".
func (c SlidingWindowLog) Slot() string {
	return slidingLogSlots.get(int64(c.Window / time.Microsecond))
}

// Validate reports a Limit outside [1, 2^53] or a Window that is not a whole number of µs
// in [1µs, MaxMicros µs].
func (c SlidingWindowLog) Validate() error {
	if err := checkCount("SlidingWindowLog.Limit", c.Limit); err != nil {
		return err
	}
	_, err := windowMicros("SlidingWindowLog.Window", c.Window)
	return err
}

// String describes the config.
func (c SlidingWindowLog) String() string {
	return fmt.Sprintf("sliding-log(limit=%d, window=%v)", c.Limit, c.Window)
}

// NewState returns an empty log.
func (SlidingWindowLog) NewState() State { return &slidingLogState{} }

// CloneState returns a deep copy of the state.
func (s *slidingLogState) CloneState() State {
	c := *s
	c.entries = slices.Clone(s.entries) // an exact copy, head and reused prefix included
	return &c
}

// Script returns the Lua twin of SlidingWindowLog: a hash {total} at KEYS[1] and the list
// of "T:N" entries, oldest first, at KEYS[2] (the state key followed by ":log").
func (SlidingWindowLog) Script() *Script { return slidingWindowLogScript }

// AppendArgs appends Limit and the Window in µs.
func (c SlidingWindowLog) AppendArgs(args []any) []any {
	return append(args, c.Limit, micros(c.Window))
}

// quota returns Limit per Window.
func (c SlidingWindowLog) quota() Quota { return Quota{Limit: c.Limit, Window: c.Window} }

// live returns the index of the first entry that still counts at now and the sum of the
// entries from there on. It leaves s alone: a denial writes nothing, because forgetting
// entries at a now that later goes backwards would let them be granted again; a grant,
// whose entry is at or after now, can forget them safely (see drop).
func (c SlidingWindowLog) live(s *slidingLogState, now int64) (head int, total int64) {
	w := int64(c.Window / time.Microsecond)
	head, total = s.head, s.total
	for head < len(s.entries) && s.entries[head].t <= now-w {
		total -= s.entries[head].n
		head++
	}
	return head, total
}

// drop forgets the entries before head, whose sum has already left total.
func (s *slidingLogState) drop(head int, total int64) {
	s.head, s.total = head, total
	if s.head == len(s.entries) {
		s.entries, s.head = s.entries[:0], 0
	} else if s.head > 32 && s.head*2 > len(s.entries) {
		// Compact so the backing array does not grow without bound.
		n := copy(s.entries, s.entries[s.head:])
		s.entries, s.head = s.entries[:n], 0
	}
}

// Apply logs req.N at the earliest instant ≥ now (and ≥ the last logged grant) at which the
// window ending there has room.
// A Charge logs req.N whatever the window holds (see charge).
func (c SlidingWindowLog) Apply(st State, now int64, req Request) Decision {
	s := st.(*slidingLogState)
	if req.Charge && req.N > 0 {
		return c.charge(s, now, req.N)
	}
	head, total := c.live(s, now)
	live := s.entries[head:]
	if req.N > c.Limit || req.N <= 0 {
		return never(c.Limit, c.remaining(live, total, now), c.reset(s, now))
	}
	// The grant can happen once the oldest entries, dropped until the rest leaves room
	// for N, have left the window, and not before the last logged grant.
	at := grantFloor(live, now)
	at = c.untilRoom(live, total, c.Limit-req.N, at)
	wait := at - now
	maxWait := req.maxWaitMicros()
	if total > maxExact-req.N {
		// The log holds at most 2^53 permits, so that its total is exact in the Lua twin's
		// doubles (and far from overflowing): reservations queued windows ahead could
		// otherwise pile up more. The request waits, unreserved, until enough entries have
		// left the window at its now; and, as any request, until its wait fits MaxWait.
		until := c.untilRoom(live, total, maxExact-req.N, now)
		return Decision{Limit: c.Limit, Remaining: c.remaining(live, total, now),
			RetryAfter: max(toDuration(until-now), retryAfter(wait, maxWait)),
			ResetAfter: toDuration(c.reset(s, now))}
	}
	if wait > maxWait {
		return Decision{Limit: c.Limit, Remaining: c.remaining(live, total, now),
			RetryAfter: retryAfter(wait, maxWait), ResetAfter: toDuration(c.reset(s, now))}
	}
	s.drop(head, total)
	if k := len(s.entries); k > s.head && s.entries[k-1].t == at {
		s.entries[k-1].n += req.N
	} else {
		s.entries = append(s.entries, logEntry{t: at, n: req.N})
	}
	s.total += req.N
	live = s.entries[s.head:]
	return Decision{Allowed: true, Limit: c.Limit, Remaining: c.remaining(live, s.total, now),
		ResetAfter: toDuration(c.reset(s, now)), Wait: toDuration(wait), At: at}
}

// charge logs n whatever the window holds ([Request].Charge), as a grant with no wait is
// logged: at now, or at the newest entry if it is later (a reservation), so that it
// leaves the window as the window slides past it. The log holds at most 2^53 permits
// (exact in the Lua twin's doubles), more than any Limit: a charge beyond that counts up
// to it. Then compact bounds the log.
func (c SlidingWindowLog) charge(s *slidingLogState, now, n int64) Decision {
	head, total := c.live(s, now)
	at := grantFloor(s.entries[head:], now)
	n = min(n, maxExact-total)
	s.drop(head, total) // the entry is at or after now: see live
	if k := len(s.entries); k > s.head && s.entries[k-1].t == at {
		s.entries[k-1].n += n
	} else {
		s.entries = append(s.entries, logEntry{t: at, n: n})
	}
	s.total += n
	c.compact(s)
	// RetryAfter: when Apply grants one permit with no wait (the entries then left in the
	// window hold at most Limit-1). The newest entry is at.
	live := s.entries[s.head:]
	next := c.untilRoom(live, s.total, c.Limit-1, at)
	return Decision{Allowed: true, Limit: c.Limit, Remaining: c.remaining(live, s.total, now),
		RetryAfter: retryAfter(next-now, 0), ResetAfter: toDuration(c.reset(s, now)), At: at}
}

// compact merges the live entries before the newest run of entries that holds at least
// Limit into the oldest entry of that run, so that the log stays at most about Limit
// entries long (one per instant otherwise: a stream of small charges would grow it
// without bound). No decision changes (TestChargeSlidingLogCompactionChangesNoDecision):
// wherever a merged entry would still count on its own, the whole run counts too and
// alone denies every request, which waits at least until the run's oldest entry has left
// the window, merged or not. (A refund of a merged entry's grant finds nothing to give
// back: it denies more, never less. Near 2^53 permits the cap of the log counts the merged
// permits a little longer.)
func (c SlidingWindowLog) compact(s *slidingLogState) {
	live := s.entries[s.head:]
	if len(live) < 2 || s.total-live[0].n < c.Limit {
		return // no run after the first entry holds Limit: nothing to read
	}
	var run int64
	for i := len(live) - 1; i >= 1; i-- {
		run += live[i].n
		if run >= c.Limit {
			live[i].n += s.total - run // the sum of live[:i]
			s.drop(s.head+i, s.total)
			return
		}
	}
}

// grantFloor is the earliest instant a grant can take: now, or the newest live entry if
// it is later (requests are served in order).
func grantFloor(live []logEntry, now int64) int64 {
	if len(live) > 0 && live[len(live)-1].t > now {
		return live[len(live)-1].t
	}
	return now
}

// untilRoom drops the oldest live entries (summing total) until the rest sum to at most
// bound, and returns the later of t and the instant the last dropped entry leaves the window.
func (c SlidingWindowLog) untilRoom(live []logEntry, total, bound, t int64) int64 {
	w := int64(c.Window / time.Microsecond)
	for i := 0; total > bound && i < len(live); i++ {
		total -= live[i].n
		t = max(t, live[i].t+w)
	}
	return t
}

// remaining is what a request at now could take without waiting: nothing while a later
// entry (a reservation) is queued, since requests are served in order, else Limit - total.
func (c SlidingWindowLog) remaining(live []logEntry, total, now int64) int64 {
	if len(live) > 0 && live[len(live)-1].t > now {
		return 0
	}
	return max(0, c.Limit-total)
}

// reset is the time in µs until the last entry has left the window.
func (c SlidingWindowLog) reset(s *slidingLogState, now int64) int64 {
	if s.head == len(s.entries) {
		return 0
	}
	return s.entries[len(s.entries)-1].t + int64(c.Window/time.Microsecond) - now
}

// Refund removes up to n permits from the entry logged at at, if it is still in the log.
// An emptied entry is removed, except the newest, which stays with no permits: requests
// still queue behind its instant.
func (c SlidingWindowLog) Refund(st State, now int64, n int64, at int64) {
	s := st.(*slidingLogState)
	if n <= 0 {
		return
	}
	for i := len(s.entries) - 1; i >= s.head; i-- {
		e := &s.entries[i]
		if e.t != at {
			continue
		}
		take := min(n, e.n)
		if take == 0 {
			return // nothing to give back, nothing written
		}
		e.n -= take
		s.total -= take
		if e.n > 0 {
			return
		}
		if i == len(s.entries)-1 {
			// The newest entry stays, empty: it is the floor of every later grant, which
			// keeps the entries grants have forgotten out of the windows a clock stepping
			// backwards would look at. (So later requests still queue behind it.)
			return
		}
		s.entries = append(s.entries[:i], s.entries[i+1:]...)
		return
	}
}

// Samples (see Samples): limits of 1 to 50 (the log grows with Limit), windows of 3 µs
// to a second.
var _ = sample(
	SlidingWindowLog{Limit: 1, Window: time.Second},
	SlidingWindowLog{Limit: 3, Window: time.Second},
	SlidingWindowLog{Limit: 50, Window: 10 * time.Millisecond},
	SlidingWindowLog{Limit: 2, Window: 3 * time.Microsecond},
)
