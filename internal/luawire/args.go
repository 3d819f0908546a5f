package luawire

import (
	"math"
	"strconv"
	"time"
)

// MaxMicros is algo.MaxMicros: the longest wait or span, in µs, that a script reports
// exactly; a reply of MaxMicros or more stands for never. algo's tests check that the
// two agree.
const MaxMicros int64 = 1_000_000_000_000_000

// ServerTime is the now of [Now], [Apply], [Peek] and [Refund] that lets the script read
// the Redis server's TIME, so that the clocks of the clients do not matter.
const ServerTime int64 = math.MinInt64

// forever is algo.Forever, the MaxWait without bound.
const forever time.Duration = math.MaxInt64

// Now returns ARGV[2] of a script call at now (µs since the Unix epoch): now itself, or
// "" for [ServerTime].
func Now(now int64) any {
	if now == ServerTime {
		return ""
	}
	return now
}

// PaddedNow returns ARGV[2] of a script call at now (µs since the Unix epoch, not
// [ServerTime]) whose TTLs are each padded by pad µs: "now pad", or now alone when pad ≤ 0.
// A store deciding at a client's time pads the TTLs so that Redis, which expires keys on
// its own clock, keeps a state while the client clock, running up to pad behind, still
// needs it.
func PaddedNow(now, pad int64) any {
	if pad <= 0 {
		return now
	}
	var buf [41]byte // two int64s and a space: one allocation for the string, not three
	b := strconv.AppendInt(buf[:0], now, 10)
	b = append(b, ' ')
	return string(strconv.AppendInt(b, pad, 10))
}

// MaxWaitMicros converts a request's MaxWait to ARGV[4] exactly as the Go transitions of
// package algo convert it (algo's tests check that they agree): whole µs rounded down, in
// [0, MaxMicros-1], MaxMicros-1 for Forever and anything beyond, since a wait clamped to
// MaxMicros is never granted.
func MaxWaitMicros(d time.Duration) int64 {
	switch {
	case d <= 0:
		return 0
	case d == forever || d/time.Microsecond >= time.Duration(MaxMicros):
		return MaxMicros - 1
	default:
		return int64(d / time.Microsecond)
	}
}

// Apply appends to dst the ARGV of an "apply" of n permits waiting at most maxWait at now
// (µs since the Unix epoch, or [ServerTime]), followed by config, the algorithm's
// AppendArgs(nil). A store may cache config per algorithm: it depends on the config alone.
func Apply(dst []any, now, n int64, maxWait time.Duration, config []any) []any {
	dst = append(dst, "apply", Now(now), n, MaxWaitMicros(maxWait))
	return append(dst, config...)
}

// Charge appends to dst the ARGV of a "charge" of n permits at now (µs since the Unix
// epoch, or [ServerTime]), followed by config: an "apply" that records n as used whatever
// is left (algo.Request.Charge), with MaxWait 0. Its reply is an apply's.
func Charge(dst []any, now, n int64, _ time.Duration, config []any) []any {
	dst = append(dst, "charge", Now(now), n, 0)
	return append(dst, config...)
}

// Peek appends to dst the ARGV of a "peek": those of [Apply] under the mode "peek", whose
// reply [ParseDecision] decodes.
func Peek(dst []any, now, n int64, maxWait time.Duration, config []any) []any {
	dst = append(dst, "peek", Now(now), n, MaxWaitMicros(maxWait))
	return append(dst, config...)
}

// Refund appends to dst the ARGV of a "refund" at now (µs since the Unix epoch, or
// [ServerTime]) of n permits of the grant made at at (its Decision.At), followed by
// config.
func Refund(dst []any, now, n, at int64, config []any) []any {
	dst = append(dst, "refund", Now(now), n, at)
	return append(dst, config...)
}
