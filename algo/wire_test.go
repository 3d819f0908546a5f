package algo

import (
	"testing"
	"time"

	"github.com/ratekit/limiter/internal/luawire"
)

// The wire format lives in internal/luawire; these are its names as the tests of this
// package have always called them, on the package's own types.

const ServerTime = luawire.ServerTime

var ErrBadReply = luawire.ErrBadReply

type ReplyError = luawire.ReplyError

func NowArg(now int64) any            { return luawire.Now(now) }
func PaddedNowArg(now, pad int64) any { return luawire.PaddedNow(now, pad) }
func ParseRefund(reply any) error     { return luawire.ParseRefund(reply) }
func RefundArgs(dst []any, now, n, at int64, config []any) []any {
	return luawire.Refund(dst, now, n, at, config)
}

func ApplyArgs(dst []any, now int64, req Request, config []any) []any {
	if req.Charge {
		return luawire.Charge(dst, now, req.N, req.MaxWait, config)
	}
	return luawire.Apply(dst, now, req.N, req.MaxWait, config)
}

func PeekArgs(dst []any, now int64, req Request, config []any) []any {
	return luawire.Peek(dst, now, req.N, req.MaxWait, config)
}

func ParseDecision(reply any) (Decision, error) {
	d, err := luawire.ParseDecision(reply)
	return Decision(d), err
}

// TestWireTwins checks that the wire format's copies of algo's constants and conversions
// agree with them: MaxMicros, Never, and MaxWait in µs as the Go transitions see it.
func TestWireTwins(t *testing.T) {
	if luawire.MaxMicros != MaxMicros {
		t.Errorf("luawire.MaxMicros = %d, want %d", luawire.MaxMicros, MaxMicros)
	}
	if got := luawire.Duration(MaxMicros); got != Never {
		t.Errorf("luawire.Duration(MaxMicros) = %v, want Never", got)
	}
	for _, d := range []time.Duration{-1, 0, 1, 999, time.Microsecond, 1500 * time.Microsecond, time.Hour,
		time.Duration(MaxMicros-1) * time.Microsecond, time.Duration(MaxMicros) * time.Microsecond,
		time.Duration(MaxMicros)*time.Microsecond + 1, Forever - 1, Forever} {
		if got, want := luawire.MaxWaitMicros(d), (Request{MaxWait: d}).maxWaitMicros(); got != want {
			t.Errorf("luawire.MaxWaitMicros(%v) = %d, want %d as the Go transitions", d, got, want)
		}
	}
	for _, us := range []int64{-5, 0, 1, 12345, MaxMicros - 1, MaxMicros, MaxMicros + 1} {
		if got, want := luawire.Duration(us), toDuration(us); got != want {
			t.Errorf("luawire.Duration(%d) = %v, want %v", us, got, want)
		}
	}
}
