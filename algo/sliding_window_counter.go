package algo

import (
	_ "embed" // the Lua twin
	"fmt"
	"time"
)

// SlidingWindowCounter keeps two counters per key, for the current epoch-aligned window and
// the one before, and estimates the sliding window by weighting the previous count by how
// much of it the sliding window still overlaps:
//
//	estimate(t) = prev·(1 − (t − start)/Window) + curr,   start = the current window's start
//
// A request for N is allowed at t when estimate(t) + N ≤ Limit. Memory is O(1) per key; the
// estimate assumes the previous window's grants were spread evenly, so it can be off when
// they were not. A reservation that does not fit in the current window goes to the earliest
// instant of the next window (or the one after) where it does. A charge ([Request].Charge)
// is counted as a grant in the state's window, whatever the estimate, and weighs until the
// sliding window has passed it. docs/algorithms.md
// ("SlidingWindowCounter") has the integer arithmetic shared with the Lua twin.
type SlidingWindowCounter struct {
	Limit  int64         // permits per sliding window, and the largest N; ≥ 1
	Window time.Duration // window length; a whole number of µs in [1µs, MaxMicros µs] (31.7 years)
}

// slidingCounterState mirrors the Lua twin's packed state: fields win, curr and prev.
type slidingCounterState struct {
	valid bool
	win   int64 // index of the window curr counts
	curr  int64
	prev  int64 // count of window win-1
}

// slidingWindowCounterLua is the Lua twin, run after prelude.lua (see Script).
//
//go:embed sliding_window_counter.lua
var slidingWindowCounterLua string

// The script is built once: Script returns the same pointer on every call, so a store can
// key its cache of loaded SHA1s by it. The slot names are interned (see slotCache).
var (
	slidingWindowCounterScript = newScript(SlidingWindowCounter{}.Name(), slidingWindowCounterLua)
	slidingCounterSlots        = slotCache{prefix: "sc:"}
)

// Compile-time checks: SlidingWindowCounter has a Lua twin and a Quota, and its state copies itself.
var (
	_ Scripted    = SlidingWindowCounter{}
	_ quoter      = SlidingWindowCounter{}
	_ StateCloner = (*slidingCounterState)(nil)
)

// Name returns "sliding-counter".
func (SlidingWindowCounter) Name() string { return "sliding-counter" }

// Slot returns "sc:<window in µs>".
func (c SlidingWindowCounter) Slot() string {
	return slidingCounterSlots.get(int64(c.Window / time.Microsecond))
}

// Validate reports a Limit outside [1, 2^53] or a Window that is not a whole number of µs
// in [1µs, MaxMicros µs].
func (c SlidingWindowCounter) Validate() error {
	if err := checkCount("SlidingWindowCounter.Limit", c.Limit); err != nil {
		return err
	}
	_, err := windowMicros("SlidingWindowCounter.Window", c.Window)
	return err
}

// String describes the config.
func (c SlidingWindowCounter) String() string {
	return fmt.Sprintf("sliding-counter(limit=%d, window=%v)", c.Limit, c.Window)
}

// NewState returns the state of a key with no grants.
func (SlidingWindowCounter) NewState() State { return &slidingCounterState{} }

// CloneState returns a deep copy of the state.
func (s *slidingCounterState) CloneState() State {
	c := *s
	return &c
}

// Script returns the Lua twin of SlidingWindowCounter: one packed string "C" win curr prev at
// KEYS[1].
func (SlidingWindowCounter) Script() *Script { return slidingWindowCounterScript }

// AppendArgs appends Limit and the Window in µs.
func (c SlidingWindowCounter) AppendArgs(args []any) []any {
	return append(args, c.Limit, micros(c.Window))
}

// quota returns Limit per Window.
func (c SlidingWindowCounter) quota() Quota { return Quota{Limit: c.Limit, Window: c.Window} }

// view returns the counters as seen from window cur: shifted forward when cur is later
// than the state's window; a state in a future window (reservations) is kept as it is.
func (c SlidingWindowCounter) view(s *slidingCounterState, cur int64) (win, curr, prev int64) {
	switch {
	case !s.valid || s.win < cur-1:
		return cur, 0, 0
	case s.win == cur-1:
		return cur, 0, s.curr
	default:
		return s.win, s.curr, s.prev
	}
}

// need is the offset in µs from the start of a window from which n more permits fit
// beside curr, with prev in the window before: the least t with prev·(1 - t/Window) + curr
// + n ≤ Limit, that is ceil(Window·(1 - (Limit-curr-n)/prev)), or 0. The caller ensures
// curr + n ≤ Limit. It may exceed MaxMicros (a window can be longer): no clamp.
func (c SlidingWindowCounter) need(curr, prev, n int64) int64 {
	if prev <= 0 {
		return 0
	}
	w := int64(c.Window / time.Microsecond)
	return ceilCount(float64(w) * (1 - float64(c.Limit-curr-n)/float64(prev)))
}

// fit returns the earliest instant ≥ from inside window win at which n more permits fit,
// or false when none does.
func (c SlidingWindowCounter) fit(win, curr, prev, n, from int64) (int64, bool) {
	w := int64(c.Window / time.Microsecond)
	start := win * w
	if curr+n > c.Limit {
		return 0, false
	}
	at := max(from, start, start+c.need(curr, prev, n))
	if at >= start+w {
		return 0, false
	}
	return at, true
}

// place returns the earliest instant ≥ now at which n permits (at most Limit) fit beside
// the counters of window win, trying that window, then the next (prev := curr), then the
// one after (empty), and the counters of the window they fit in.
func (c SlidingWindowCounter) place(win, curr, prev, n, now int64) (at, pwin, pcurr, pprev int64) {
	if at, ok := c.fit(win, curr, prev, n, now); ok {
		return at, win, curr, prev
	}
	if at, ok := c.fit(win+1, 0, curr, n, now); ok {
		return at, win + 1, 0, curr
	}
	return (win + 2) * int64(c.Window/time.Microsecond), win + 2, 0, 0
}

// Apply grants req.N at the earliest instant ≥ now at which the estimate leaves room.
// A Charge counts req.N whatever the estimate is (see charge).
func (c SlidingWindowCounter) Apply(st State, now int64, req Request) Decision {
	s := st.(*slidingCounterState)
	if req.Charge && req.N > 0 {
		return c.charge(s, now, req.N)
	}
	w := int64(c.Window / time.Microsecond)
	cur := floorDiv(now, w)
	win, curr, prev := c.view(s, cur)
	if req.N > c.Limit || req.N <= 0 {
		return never(c.Limit, c.remaining(win, curr, prev, now), c.reset(win, curr, prev, now))
	}
	at, win, curr, prev := c.place(win, curr, prev, req.N, now)
	wait := at - now
	if maxWait := req.maxWaitMicros(); wait > maxWait {
		win, curr, prev = c.view(s, cur)
		return Decision{Limit: c.Limit, Remaining: c.remaining(win, curr, prev, now),
			RetryAfter: retryAfter(wait, maxWait), ResetAfter: toDuration(c.reset(win, curr, prev, now))}
	}
	curr += req.N
	s.valid, s.win, s.curr, s.prev = true, win, curr, prev
	return Decision{Allowed: true, Limit: c.Limit, Remaining: c.remaining(win, curr, prev, now),
		ResetAfter: toDuration(c.reset(win, curr, prev, now)), Wait: toDuration(wait), At: at}
}

// charge counts n in the window of the state's view whatever the estimate is
// ([Request].Charge), as a grant there is counted: the current window, or the later one
// that reservations already wait in (the counters hold no earlier one). It weighs in the
// estimate as that window's grants do, so it leaves the sliding window as the window
// slides past. A window counts at most 2^53 permits (exact in the Lua twin's doubles),
// more than any Limit. At is the instant the charge counts at: now, or the start of that
// window, where a refund finds it.
func (c SlidingWindowCounter) charge(s *slidingCounterState, now, n int64) Decision {
	w := int64(c.Window / time.Microsecond)
	win, curr, prev := c.view(s, floorDiv(now, w))
	if curr > maxExact-n {
		curr = maxExact
	} else {
		curr += n
	}
	s.valid, s.win, s.curr, s.prev = true, win, curr, prev
	// RetryAfter: when Apply places one permit with no wait.
	next, _, _, _ := c.place(win, curr, prev, 1, now)
	return Decision{Allowed: true, Limit: c.Limit, Remaining: c.remaining(win, curr, prev, now),
		RetryAfter: retryAfter(next-now, 0), ResetAfter: toDuration(c.reset(win, curr, prev, now)), At: max(now, win*w)}
}

// remaining is the most a request at now could take without waiting: 0 while the state is
// in a future window, else the largest r with need(curr, prev, r) ≤ now - start. It starts
// from Limit - curr - ceil(prev·(end - now)/Window), the same in exact arithmetic, and
// steps until it agrees with need, which float64 rounding at an exact boundary may not.
func (c SlidingWindowCounter) remaining(win, curr, prev, now int64) int64 {
	w := int64(c.Window / time.Microsecond)
	start := win * w
	if now < start || curr >= c.Limit {
		return 0
	}
	weighted := float64(prev) * float64(start+w-now) / float64(w)
	r := min(max(0, c.Limit-curr-ceilCount(weighted)), c.Limit-curr)
	for r > 0 && c.need(curr, prev, r) > now-start {
		r--
	}
	for r < c.Limit-curr && c.need(curr, prev, r+1) <= now-start {
		r++
	}
	return r
}

// reset is the time in µs until both counters have left the sliding window. With both at
// zero in a future window (its reservations were refunded) the state is fresh once that
// window has begun; until then it still queues requests behind it.
func (c SlidingWindowCounter) reset(win, curr, prev, now int64) int64 {
	w := int64(c.Window / time.Microsecond)
	switch {
	case curr > 0:
		return (win+2)*w - now
	case prev > 0:
		return (win+1)*w - now
	default:
		return max(0, win*w-now)
	}
}

// Refund gives n permits back to the window they were granted in, if it is still counted.
func (c SlidingWindowCounter) Refund(st State, now int64, n int64, at int64) {
	s := st.(*slidingCounterState)
	if !s.valid || n <= 0 {
		return
	}
	switch floorDiv(at, int64(c.Window/time.Microsecond)) {
	case s.win:
		s.curr = max(0, s.curr-n)
	case s.win - 1:
		s.prev = max(0, s.prev-n)
	}
}

// Samples (see Samples): limits of 1 to thousands, windows of 7 µs to an hour.
var _ = sample(
	SlidingWindowCounter{Limit: 1, Window: time.Second},
	SlidingWindowCounter{Limit: 10, Window: time.Second},
	SlidingWindowCounter{Limit: 100, Window: 10 * time.Millisecond},
	SlidingWindowCounter{Limit: 3, Window: 7 * time.Microsecond},
	SlidingWindowCounter{Limit: 5000, Window: time.Hour},
)
