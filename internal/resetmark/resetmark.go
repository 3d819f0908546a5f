package resetmark

import (
	"time"

	"github.com/ratekit/limiter/algo"
)

// Suffix follows a Redis state key to name its mark.
const Suffix = "!reset"

// Mark is what a Reset leaves on a state, in µs of the store's clock.
type Mark struct {
	At    int64 // the Reset's instant: a refund of a grant acting before it is dropped
	Until int64 // the mark's end: At + 2 × Horizon
}

// New returns the mark of a Reset of a state of a at now.
func New(a algo.Algorithm, now int64) Mark {
	return Mark{At: now, Until: now + Span(a)}
}

// Span is how long, in µs, the mark of a Reset of a state of a lasts: twice its Horizon.
func Span(a algo.Algorithm) int64 { return 2 * Horizon(a) }

// Merge returns the mark that keeps what both m and o drop (a second Reset).
func (m Mark) Merge(o Mark) Mark {
	return Mark{At: max(m.At, o.At), Until: max(m.Until, o.Until)}
}

// Live reports whether m still drops refunds at now.
func (m Mark) Live(now int64) bool { return now < m.Until }

// Drops reports whether m drops, at now, the refund of a grant acting at at.
func (m Mark) Drops(now, at int64) bool { return m.Live(now) && at < m.At }

// Horizon is the time in µs a state of a takes, once it has granted its whole quota at
// once, to be fresh again (a window, 2 for the sliding counter; Burst/Rate for a bucket):
// the ResetAfter of a grant of Limit permits to a fresh state at the instant 0, where
// every window begins. It is 0 for an algorithm that grants nothing.
func Horizon(a algo.Algorithm) int64 {
	one := a.Apply(a.NewState(), 0, algo.Request{N: 1})
	if !one.Allowed {
		return 0
	}
	h := int64(one.ResetAfter / time.Microsecond)
	if one.Limit > 1 {
		if all := a.Apply(a.NewState(), 0, algo.Request{N: one.Limit}); all.Allowed {
			h = int64(all.ResetAfter / time.Microsecond)
		} else if h < algo.MaxMicros/one.Limit {
			h *= one.Limit // one permit's span, Limit times over
		} else {
			h = algo.MaxMicros
		}
	}
	return min(max(h, 0), algo.MaxMicros)
}
