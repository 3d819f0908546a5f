package denial

import (
	"math"
	"time"

	"github.com/ratekit/limiter/algo"
)

// Never is an instant that does not come: the deadline of a denial whose RetryAfter or
// ResetAfter is algo.Never.
const Never = math.MaxInt64

// Entry is one remembered denial; its instants are µs on the keeper's clock.
type Entry struct {
	Grant     int64 // when the same request can be granted (sent + RetryAfter); Never
	Until     int64 // when the entry stops answering: Grant, or earlier with a maximum age
	Reset     int64 // when the state is fresh again (sent + ResetAfter); Never
	Limit     int64 // the denial's Limit
	Remaining int64 // the denial's Remaining, as it was at the denial
}

// Of returns the entry of denial d of a request sent at sent (µs on the keeper's clock,
// read before the request left, so that the deadlines never fall after the store's). A
// maxAge > 0 (µs) caps how long the entry answers, whatever its RetryAfter.
func Of(d algo.Decision, sent, maxAge int64) Entry {
	e := Entry{Grant: Never, Until: Never, Reset: Never, Limit: d.Limit, Remaining: d.Remaining}
	if d.RetryAfter != algo.Never {
		e.Grant = sent + int64(d.RetryAfter/time.Microsecond)
		e.Until = e.Grant
	}
	if d.ResetAfter != algo.Never {
		e.Reset = sent + int64(d.ResetAfter/time.Microsecond)
	}
	if maxAge > 0 && sent+maxAge < e.Until {
		e.Until = sent + maxAge
	}
	return e
}

// Live reports whether the entry still answers at now.
func (e *Entry) Live(now int64) bool { return now < e.Until }

// Answer is the denial as seen at now: RetryAfter and ResetAfter counted down to the
// entry's deadlines (algo.Never stays Never), the Limit and Remaining of the denial.
func (e *Entry) Answer(now int64) algo.Decision {
	out := algo.Decision{Limit: e.Limit, Remaining: e.Remaining, RetryAfter: algo.Never, ResetAfter: algo.Never}
	if e.Grant != Never {
		out.RetryAfter = time.Duration(e.Grant-now) * time.Microsecond
	}
	if e.Reset != Never {
		out.ResetAfter = time.Duration(max(0, e.Reset-now)) * time.Microsecond
	}
	return out
}
