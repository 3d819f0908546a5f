package algo

import (
	"fmt"
	"time"
)

// SlidingWindowLog remembers the instant of every grant and admits a request only if the
// window of length Window ending at its instant holds at most Limit permits with it. It is
// exact (no window of length Window ever holds more than Limit, boundaries included) and
// costs memory proportional to the grants in the last Window, at most Limit entries per key.
//
// Windows are half-open on the left: a grant at t counts in (t-Window, t], so a grant
// exactly Window before now no longer counts. A reservation is placed at the earliest
// instant, not before the latest grant already logged (first come, first served), at which
// the window ending there has room.
type SlidingWindowLog struct {
	Limit  int64         // permits per sliding window, and the largest N; ≥ 1
	Window time.Duration // window length; a whole number of µs, ≥ 1µs
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

// Name returns "sliding-log".
func (SlidingWindowLog) Name() string { return "sliding-log" }

// Slot returns "sl:<window in µs>".
func (c SlidingWindowLog) Slot() string {
	return slidingLogSlots.get(int64(c.Window / time.Microsecond))
}

// Validate reports a Limit outside [1, 2^53] or a Window that is not a whole number of µs.
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

// trim drops the entries that no longer count at now.
func (c SlidingWindowLog) trim(s *slidingLogState, now int64) {
	w := int64(c.Window / time.Microsecond)
	for s.head < len(s.entries) && s.entries[s.head].t <= now-w {
		s.total -= s.entries[s.head].n
		s.head++
	}
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
func (c SlidingWindowLog) Apply(st State, now int64, req Request) Decision {
	s := st.(*slidingLogState)
	w := int64(c.Window / time.Microsecond)
	c.trim(s, now)
	live := s.entries[s.head:]
	at := now
	if len(live) > 0 && live[len(live)-1].t > at {
		at = live[len(live)-1].t
	}
	if req.N > c.Limit || req.N <= 0 {
		return never(c.Limit, c.Limit-s.total, c.reset(s, now))
	}
	// Drop the oldest entries until the rest leaves room for N; the grant can happen once
	// the last dropped entry has left the window.
	sum := s.total
	for i := 0; sum+req.N > c.Limit; i++ {
		sum -= live[i].n
		if t := live[i].t + w; t > at {
			at = t
		}
	}
	wait := at - now
	if wait > req.maxWaitMicros() {
		return Decision{Limit: c.Limit, Remaining: max(0, c.Limit-s.total),
			RetryAfter: toDuration(wait), ResetAfter: toDuration(c.reset(s, now))}
	}
	if len(live) > 0 && live[len(live)-1].t == at {
		s.entries[len(s.entries)-1].n += req.N
	} else {
		s.entries = append(s.entries, logEntry{t: at, n: req.N})
	}
	s.total += req.N
	return Decision{Allowed: true, Limit: c.Limit, Remaining: max(0, c.Limit-s.total),
		ResetAfter: toDuration(c.reset(s, now)), Wait: toDuration(wait), At: at}
}

// reset is the time in µs until the last entry has left the window.
func (c SlidingWindowLog) reset(s *slidingLogState, now int64) int64 {
	if s.head == len(s.entries) {
		return 0
	}
	return s.entries[len(s.entries)-1].t + int64(c.Window/time.Microsecond) - now
}

// Refund removes up to n permits from the entry logged at at, if it is still in the log.
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
		e.n -= take
		s.total -= take
		if e.n == 0 {
			s.entries = append(s.entries[:i], s.entries[i+1:]...)
		}
		return
	}
}
