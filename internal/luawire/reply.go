package luawire

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Decision is an "apply" or "peek" reply, with the fields of algo.Decision in its order,
// so that algo.Decision(d) converts it.
type Decision struct {
	Allowed    bool
	Limit      int64
	Remaining  int64
	RetryAfter time.Duration
	ResetAfter time.Duration
	Wait       time.Duration
	At         int64
}

// ErrBadReply is wrapped by every error of [ParseDecision] and [ParseRefund]: the script
// replied something the calling convention does not allow.
var ErrBadReply = errors.New("script reply does not follow the calling convention")

// A ReplyError reports a script reply that does not follow the calling convention: what
// arrived, shortened, and what is wrong with it. It wraps [ErrBadReply].
type ReplyError struct {
	Reply   any    // the reply as the Redis client returned it
	Problem string // what is wrong, e.g. "want an array of 7 integers"
}

func (e *ReplyError) Error() string {
	return "script replied " + describeReply(e.Reply) + ": " + e.Problem
}

// Unwrap returns ErrBadReply.
func (e *ReplyError) Unwrap() error { return ErrBadReply }

// ParseDecision decodes the reply of an "apply" or a "peek": seven integers (int64, as
// go-redis returns them over RESP2 and RESP3 alike), {allowed (0/1), limit, remaining,
// retry_after_us, reset_after_us, wait_us, at_us}. Durations of MaxMicros µs or more are
// never (math.MaxInt64). Anything else is a *[ReplyError] that says what arrived; it
// never panics.
func ParseDecision(reply any) (Decision, error) {
	vals, ok := reply.([]any)
	if !ok || len(vals) != 7 {
		return Decision{}, &ReplyError{reply, "want an array of 7 integers"}
	}
	var n [7]int64
	for i, v := range vals {
		x, ok := v.(int64)
		if !ok {
			return Decision{}, &ReplyError{reply, fmt.Sprintf("element %d is not an integer", i+1)}
		}
		n[i] = x
	}
	if n[0] != 0 && n[0] != 1 {
		return Decision{}, &ReplyError{reply, fmt.Sprintf("allowed is %d, want 0 or 1", n[0])}
	}
	for i, name := range [...]string{1: "limit", 2: "remaining", 3: "retry_after_us", 4: "reset_after_us", 5: "wait_us"} {
		if i > 0 && n[i] < 0 {
			return Decision{}, &ReplyError{reply, fmt.Sprintf("%s is %d, want ≥ 0", name, n[i])}
		}
	}
	return Decision{
		Allowed:    n[0] == 1,
		Limit:      n[1],
		Remaining:  n[2],
		RetryAfter: Duration(n[3]),
		ResetAfter: Duration(n[4]),
		Wait:       Duration(n[5]),
		At:         n[6],
	}, nil
}

// Duration converts a replied span of us µs: MaxMicros or more is never (math.MaxInt64,
// algo.Never), below 0 is 0.
func Duration(us int64) time.Duration {
	if us >= MaxMicros {
		return forever
	}
	if us <= 0 {
		return 0
	}
	return time.Duration(us) * time.Microsecond
}

// ParseRefund checks the reply of a "refund": an integer. Anything else is a
// *[ReplyError].
func ParseRefund(reply any) error {
	if _, ok := reply.(int64); !ok {
		return &ReplyError{reply, "want an integer"}
	}
	return nil
}

// describeReply renders a reply for an error message, shortened so that junk cannot flood
// logs.
func describeReply(reply any) string {
	var b strings.Builder
	describeTo(&b, reply, 0)
	const max = 200
	if b.Len() > max {
		return b.String()[:max] + "…"
	}
	return b.String()
}

func describeTo(b *strings.Builder, v any, depth int) {
	switch v := v.(type) {
	case nil:
		b.WriteString("nil")
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case string:
		b.WriteString(strconv.Quote(v))
	case []any:
		if depth == 0 {
			fmt.Fprintf(b, "an array of %d ", len(v))
		}
		b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				b.WriteByte(' ')
			}
			if b.Len() > 200 || depth > 4 {
				b.WriteString("…")
				break
			}
			describeTo(b, e, depth+1)
		}
		b.WriteByte(']')
	default:
		fmt.Fprintf(b, "%T(%v)", v, v)
	}
}
