package algo

import "fmt"

// GCRA is the generic cell rate algorithm: one theoretical arrival time (TAT) per key.
// Requests are spaced by the emission interval T = 1/Rate, and up to Burst may arrive at
// once. It admits exactly what a TokenBucket with the same Rate and Burst admits, but keeps
// a single number per key.
type GCRA struct {
	Rate  float64 // permits per second; finite, > 0
	Burst int64   // permits that may arrive at once, and the largest N; ≥ 1
}

// gcraState mirrors the Lua twin's key: the TAT in µs (fractional).
type gcraState struct {
	valid bool
	tat   float64
}

// Name returns "gcra".
func (GCRA) Name() string { return "gcra" }

// Slot returns "gcra": a rate change keeps the key's TAT.
func (GCRA) Slot() string { return "gcra" }

// Validate reports a Rate that is not finite and positive or a Burst outside [1, 2^53].
func (c GCRA) Validate() error {
	if err := checkRate("GCRA.Rate", c.Rate); err != nil {
		return err
	}
	return checkCount("GCRA.Burst", c.Burst)
}

// String describes the config.
func (c GCRA) String() string { return fmt.Sprintf("gcra(rate=%g/s, burst=%d)", c.Rate, c.Burst) }

// NewState returns the state of an idle key.
func (GCRA) NewState() State { return &gcraState{} }

// interval is the emission interval in µs.
func (c GCRA) interval() float64 { return 1e6 / c.Rate }

// tat returns the key's TAT, never earlier than now.
func (c GCRA) tat(s *gcraState, now int64) float64 {
	t := float64(now)
	if s.valid && s.tat > t {
		return s.tat
	}
	return t
}

// Apply admits req.N if the TAT pushed forward by N·T stays within Burst·T of now (or, with
// MaxWait, will within MaxWait).
func (c GCRA) Apply(st State, now int64, req Request) Decision {
	s := st.(*gcraState)
	t := c.interval()
	tat := c.tat(s, now)
	fnow := float64(now)
	if req.N > c.Burst || req.N <= 0 {
		return never(c.Burst, c.remaining(tat, fnow), ceilMicros(tat-fnow))
	}
	newTat := tat + float64(req.N)*t
	wait := ceilMicros(newTat - float64(c.Burst)*t - fnow)
	if wait > req.maxWaitMicros() {
		return Decision{Limit: c.Burst, Remaining: c.remaining(tat, fnow),
			RetryAfter: toDuration(wait), ResetAfter: toDuration(ceilMicros(tat - fnow))}
	}
	s.valid, s.tat = true, newTat
	return Decision{Allowed: true, Limit: c.Burst, Remaining: c.remaining(newTat, fnow),
		ResetAfter: toDuration(ceilMicros(newTat - fnow)), Wait: toDuration(wait), At: now + wait}
}

// remaining is how many single permits fit before tat reaches now + Burst·T.
func (c GCRA) remaining(tat, now float64) int64 {
	t := c.interval()
	return floorCount((now + float64(c.Burst)*t - tat) / t)
}

// Refund moves the TAT back by n·T, never before now.
func (c GCRA) Refund(st State, now int64, n int64, _ int64) {
	s := st.(*gcraState)
	if !s.valid || n <= 0 {
		return
	}
	tat := s.tat - float64(n)*c.interval()
	if f := float64(now); tat < f {
		tat = f
	}
	s.tat = tat
}
