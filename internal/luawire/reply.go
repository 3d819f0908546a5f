package luawire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
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
//
// The quick function of a [RateLibrary] replies the same seven values packed in one
// string: the byte 'D', then each value as a little-endian double (57 bytes); each must
// be a whole number.
func ParseDecision(reply any) (Decision, error) {
	var n [7]int64
	switch r := reply.(type) {
	case string:
		if len(r) != packedLen || r[0] != packedTag {
			return Decision{}, &ReplyError{reply, "want an array of 7 integers, or them packed in 57 bytes"}
		}
		for i := range n {
			f := math.Float64frombits(binary.LittleEndian.Uint64([]byte(r[1+8*i : 9+8*i])))
			if f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
				return Decision{}, &ReplyError{reply, fmt.Sprintf("value %d is not an integer", i+1)}
			}
			n[i] = int64(f)
		}
	case []any:
		if len(r) != 7 {
			return Decision{}, &ReplyError{reply, "want an array of 7 integers"}
		}
		for i, v := range r {
			x, ok := v.(int64)
			if !ok {
				return Decision{}, &ReplyError{reply, fmt.Sprintf("element %d is not an integer", i+1)}
			}
			n[i] = x
		}
	default:
		return Decision{}, &ReplyError{reply, "want an array of 7 integers"}
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

// The packed form of a decision (see [ParseDecision]): a tag byte and seven doubles. In
// the reply of a multi function (see [RateLibrary]) an error is its tag, the length of its
// message (int32, little-endian) and the message.
const (
	packedTag    = 'D'
	packedTagLua = "68" // packedTag, as the Lua of RateLibrary writes it
	packedLen    = 1 + 7*8
	errorTag     = 'E'
	errorTagLua  = "69"
)

// SplitMulti splits the reply of a multi function (see [RateLibrary]) into n calls'
// replies: a packed decision (for [ParseDecision]), or the message of the error that call
// raised or replied. It fails when the reply does not hold exactly n of them.
func SplitMulti(reply string, n int, each func(i int, packed, errMsg string)) error {
	for i := 0; i < n; i++ {
		switch {
		case len(reply) >= packedLen && reply[0] == packedTag:
			each(i, reply[:packedLen], "")
			reply = reply[packedLen:]
		case len(reply) >= 5 && reply[0] == errorTag:
			m := int(binary.LittleEndian.Uint32([]byte(reply[1:5])))
			if m < 0 || len(reply)-5 < m {
				return &ReplyError{reply, fmt.Sprintf("call %d of %d: an error's length runs past the reply", i+1, n)}
			}
			each(i, "", reply[5:5+m])
			reply = reply[5+m:]
		default:
			return &ReplyError{reply, fmt.Sprintf("call %d of %d: want a packed decision or an error", i+1, n)}
		}
	}
	if reply != "" {
		return &ReplyError{reply, fmt.Sprintf("%d bytes after the %d calls", len(reply), n)}
	}
	return nil
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
