package algo

import (
	_ "embed" // the Lua twin
	"fmt"
	"time"
)

// FixedWindow allows Limit permits per window; windows are aligned to the Unix epoch
// (index = now / Window) so every process agrees on them. It is the cheapest algorithm, at
// the price of letting up to 2×Limit through across a window boundary.
//
// A reservation that does not fit in the current window is placed at the start of the next
// one. The state remembers only the latest window holding grants (the tail): while the tail
// is in the future the current window is full, so later requests queue behind it. A charge
// ([Request].Charge) counts in the tail whatever it holds: past Limit, the rest of that
// window is denied, and the next starts fresh.
type FixedWindow struct {
	Limit  int64         // permits per window, and the largest N; ≥ 1
	Window time.Duration // window length; a whole number of µs in [1µs, MaxMicros µs] (31.7 years)
}

// fixedWindowState mirrors the Lua twin's packed state: fields win and count.
type fixedWindowState struct {
	valid bool
	win   int64 // index of the tail window
	count int64 // permits granted in it
}

// fixedWindowLua is the Lua twin, run after prelude.lua (see Script).
//
//go:embed fixed_window.lua
var fixedWindowLua string

// The script is built once: Script returns the same pointer on every call, so a store can
// key its cache of loaded SHA1s by it. The slot names are interned (see slotCache).
var (
	fixedWindowScript = newScript(FixedWindow{}.Name(), fixedWindowLua)
	fixedWindowSlots  = slotCache{prefix: "fw:"}
)

// Compile-time checks: FixedWindow has a Lua twin and a Quota, and its state copies itself.
var (
	_ Scripted    = FixedWindow{}
	_ quoter      = FixedWindow{}
	_ StateCloner = (*fixedWindowState)(nil)
)

// Name returns "fixed-window".
func (FixedWindow) Name() string { return "fixed-window" }

// Slot returns "fw:<window in µs>".
func (c FixedWindow) Slot() string { return fixedWindowSlots.get(int64(c.Window / time.Microsecond)) }

// Validate reports a Limit outside [1, 2^53] or a Window that is not a whole number of µs
// in [1µs, MaxMicros µs].
func (c FixedWindow) Validate() error {
	if err := checkCount("FixedWindow.Limit", c.Limit); err != nil {
		return err
	}
	_, err := windowMicros("FixedWindow.Window", c.Window)
	return err
}

// String describes the config.
func (c FixedWindow) String() string {
	return fmt.Sprintf("fixed-window(limit=%d, window=%v)", c.Limit, c.Window)
}

// NewState returns the state of a key with no grants.
func (FixedWindow) NewState() State { return &fixedWindowState{} }

// CloneState returns a deep copy of the state.
func (s *fixedWindowState) CloneState() State {
	c := *s
	return &c
}

// Script returns the Lua twin of FixedWindow: one packed string "F" win count at KEYS[1].
func (FixedWindow) Script() *Script { return fixedWindowScript }

// AppendArgs appends Limit and the Window in µs.
func (c FixedWindow) AppendArgs(args []any) []any {
	return append(args, c.Limit, micros(c.Window))
}

// quota returns Limit per Window.
func (c FixedWindow) quota() Quota { return Quota{Limit: c.Limit, Window: c.Window} }

// Apply grants req.N in the current window if it fits, else (with MaxWait) in the next.
// A Charge counts req.N whatever the window holds (see charge).
func (c FixedWindow) Apply(st State, now int64, req Request) Decision {
	s := st.(*fixedWindowState)
	if req.Charge && req.N > 0 {
		return c.charge(s, now, req.N)
	}
	w := int64(c.Window / time.Microsecond)
	cur := floorDiv(now, w)
	win, count := cur, int64(0)
	if s.valid && s.win >= cur {
		win, count = s.win, s.count
	}
	remaining := func(win, count int64) int64 {
		if win != cur {
			return 0
		}
		return max(0, c.Limit-count) // count exceeds Limit after a Limit decrease
	}
	if req.N > c.Limit || req.N <= 0 {
		return never(c.Limit, remaining(win, count), c.reset(win, now, count))
	}
	grant, total := win, count+req.N
	if total > c.Limit {
		grant, total = win+1, req.N
	}
	wait := grant*w - now
	if wait < 0 {
		wait = 0
	}
	if maxWait := req.maxWaitMicros(); wait > maxWait {
		return Decision{Limit: c.Limit, Remaining: remaining(win, count),
			RetryAfter: retryAfter(wait, maxWait), ResetAfter: toDuration(c.reset(win, now, count))}
	}
	s.valid, s.win, s.count = true, grant, total
	return Decision{Allowed: true, Limit: c.Limit, Remaining: remaining(grant, total),
		ResetAfter: toDuration(c.reset(grant, now, total)), Wait: toDuration(wait), At: now + wait}
}

// charge counts n in the tail window whatever it holds ([Request].Charge): the current
// window, or the later one that reservations already wait for (a full window could not
// count it). Past Limit, the rest of that window is denied and the next starts fresh. A
// window counts at most 2^53 permits (exact in the Lua twin's doubles), more than any
// Limit, so the cap changes no decision. At is the instant the charge counts at: now, or
// the start of the tail window, where a refund finds it.
func (c FixedWindow) charge(s *fixedWindowState, now, n int64) Decision {
	w := int64(c.Window / time.Microsecond)
	cur := floorDiv(now, w)
	win, count := cur, int64(0)
	if s.valid && s.win >= cur {
		win, count = s.win, s.count
	}
	if count > maxExact-n {
		count = maxExact
	} else {
		count += n
	}
	s.valid, s.win, s.count = true, win, count
	// RetryAfter: when Apply grants one permit with no wait: window win if it has room
	// (once it has begun), else the next.
	next, rem := win, int64(0)
	if count > c.Limit-1 {
		next = win + 1
	}
	if win == cur {
		rem = max(0, c.Limit-count)
	}
	return Decision{Allowed: true, Limit: c.Limit, Remaining: rem, RetryAfter: retryAfter(next*w-now, 0),
		ResetAfter: toDuration(c.reset(win, now, count)), At: max(now, win*w)}
}

// reset is the time in µs until window win has ended. When it holds nothing (a reservation
// in a future window was refunded) the state is fresh once win has begun: until then it
// still queues requests behind win, because it no longer knows the current window's count.
func (c FixedWindow) reset(win, now, count int64) int64 {
	w := int64(c.Window / time.Microsecond)
	if count == 0 {
		return max(0, win*w-now)
	}
	return (win+1)*w - now
}

// Refund gives n permits back to the window they were granted in, if it is still the tail.
func (c FixedWindow) Refund(st State, now int64, n int64, at int64) {
	s := st.(*fixedWindowState)
	if !s.valid || n <= 0 || s.win != floorDiv(at, int64(c.Window/time.Microsecond)) {
		return
	}
	if s.count == 0 {
		return // nothing to give back: nothing written, as in the Lua twin
	}
	s.count = max(0, s.count-n)
}

// Samples (see Samples): limits of 1 to thousands, windows of 7 µs to an hour.
var _ = sample(
	FixedWindow{Limit: 1, Window: time.Second},
	FixedWindow{Limit: 3, Window: time.Second},
	FixedWindow{Limit: 100, Window: 10 * time.Millisecond},
	FixedWindow{Limit: 2, Window: 7 * time.Microsecond},
	FixedWindow{Limit: 5000, Window: time.Hour},
)
