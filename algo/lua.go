package algo

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Script is the Lua twin of an algorithm: the same state fields and the same arithmetic as
// its Go transition, run atomically inside Redis by the distributed store.
//
// Calling convention, shared by every script (prelude.lua decodes it; [ApplyArgs],
// [PeekArgs], [RefundArgs], [ParseDecision] and [ParseRefund] encode and decode it in Go):
//
//	KEYS[i]   the state key of the decision followed by Keys[i] (Keys[0] is "", the key itself);
//	          every key carries the same Redis Cluster hash tag.
//	ARGV[1]   "apply", "peek" or "refund"
//	ARGV[2]   now in µs since the Unix epoch, or "" to read the server's TIME ([NowArg]), or
//	          "now pad": now followed by a padding in µs added to every TTL the call sets
//	          ([PaddedNowArg]; a client clock's tolerance, see distributed.WithClockTolerance)
//	ARGV[3]   N (permits asked for, or given back)
//	ARGV[4]   apply and peek: MaxWait in whole µs, rounded down, in [0, MaxMicros-1] (MaxMicros-1 for
//	          Forever, since a wait clamped to MaxMicros is never granted; the script clamps
//	          any other value the same way); refund: the grant's At in µs
//	ARGV[5..] the config, as appended by AppendArgs (floats formatted with %.17g)
//
// An "apply" replies with an array of seven integers:
// {allowed (0/1), limit, remaining, retry_after_us, reset_after_us, wait_us, at_us},
// where each of the three duration fields (retry_after_us, reset_after_us, wait_us) is
// MaxMicros for Never. A "peek" takes the arguments of an "apply" and replies what that
// apply would reply at the same instant, with what is available now as remaining (see
// [Peek]), but writes nothing: no state, no TTL, no key created or deleted (the prelude
// skips every write; a script of this package needs no code for it). A "refund" replies 0.
// Every write sets the keys' PEXPIRE to ResetAfter (plus the padding of ARGV[2], if any)
// rounded up to whole milliseconds, at least 2 ms (up to Redis 7.0, "PEXPIRE key 1" may
// delete the key at once), and a state that is fresh again is deleted.
//
// Units and precision: every instant and duration is an integer count of µs held in a Lua
// double, exact below 2^53 (about year 2255); counts are integers below 2^53 too. Floats
// are stored with %.17g, which tonumber reads back to the same double (tostring would keep
// only 14 digits).
//
// Library, when not empty, is the same script as a Redis 7 function library, for FUNCTION
// LOAD, registering one function named Function that takes the same KEYS and ARGV and
// replies the same: FCALL Function numkeys KEYS... ARGV... decides exactly as EVALSHA of
// Source. Its helpers are defined once, when the library loads, rather than on every call.
// Both names carry the SHA-1 of Source, so that every version of a script has its own.
// Scripts of other packages may leave both empty: stores then run Source.
type Script struct {
	Name     string   // the algorithm's Name
	Source   string   // Lua source, for EVAL and EVALSHA
	Keys     []string // suffixes appended to the state key; "" is the key itself
	Function string   // the function Library registers, for FCALL; "" with no Library
	Library  string   // Redis 7 function library code, for FUNCTION LOAD; "" for none
	// PadsTTL reports a script that reads ARGV[2] in the form "now pad" too ([PaddedNowArg])
	// and adds pad to every TTL it sets; a store sends that form only to such scripts. It
	// is true for every script of this package (a Penalty's, when its Rule's is).
	PadsTTL bool
}

// Scripted is implemented by the algorithms that have a Lua twin. Its script answers the
// operations of the calling convention ([Script]): "apply", "refund", and "peek" for the
// Redis store's Peek (the scripts of this package get it from their prelude).
type Scripted interface {
	Algorithm
	// Script returns the algorithm's Lua twin. The same *Script is returned on every call.
	Script() *Script
	// AppendArgs appends the config arguments the script reads from ARGV[5] on.
	AppendArgs(args []any) []any
}

// ServerTime is the now of [NowArg], [ApplyArgs] and [RefundArgs] that lets the script read
// the Redis server's TIME, so that the clocks of the clients do not matter.
const ServerTime int64 = math.MinInt64

// NowArg returns ARGV[2] of a script call at now (µs since the Unix epoch): now itself, or
// "" for [ServerTime]. The semaphore's script reads it the same way.
func NowArg(now int64) any {
	if now == ServerTime {
		return ""
	}
	return now
}

// PaddedNowArg returns ARGV[2] of a script call at now (µs since the Unix epoch, not
// [ServerTime]) whose TTLs are each padded by pad µs: "now pad", or now alone when pad ≤ 0.
// A store deciding at a client's time pads the TTLs so that Redis, which expires keys on
// its own clock, keeps a state while the client clock, running up to pad behind, still
// needs it.
func PaddedNowArg(now, pad int64) any {
	if pad <= 0 {
		return now
	}
	return strconv.FormatInt(now, 10) + " " + strconv.FormatInt(pad, 10)
}

// ApplyArgs appends to dst the ARGV of an "apply" of req at now (µs since the Unix epoch,
// or [ServerTime]), followed by config, the algorithm's AppendArgs(nil). MaxWait is
// converted exactly as the Go transitions convert it (see [Script]). A store may cache
// config per algorithm: the arguments depend on the config alone.
func ApplyArgs(dst []any, now int64, req Request, config []any) []any {
	dst = append(dst, "apply", NowArg(now), req.N, req.maxWaitMicros())
	return append(dst, config...)
}

// PeekArgs appends to dst the ARGV of a "peek" of req at now (µs since the Unix epoch, or
// [ServerTime]), followed by config: the arguments of [ApplyArgs] under the mode "peek",
// whose reply [ParseDecision] decodes. The Go twin of a peek applies req to a copy of the
// state ([StateCloner]) and keeps the original.
func PeekArgs(dst []any, now int64, req Request, config []any) []any {
	dst = append(dst, "peek", NowArg(now), req.N, req.maxWaitMicros())
	return append(dst, config...)
}

// RefundArgs appends to dst the ARGV of a "refund" at now (µs since the Unix epoch, or
// [ServerTime]) of n permits of the grant made at at (its Decision.At), followed by
// config, the algorithm's AppendArgs(nil).
func RefundArgs(dst []any, now, n, at int64, config []any) []any {
	dst = append(dst, "refund", NowArg(now), n, at)
	return append(dst, config...)
}

// ErrBadReply is wrapped by every error of [ParseDecision] and [ParseRefund]: the script
// replied something the calling convention does not allow.
var ErrBadReply = errors.New("algo: script reply does not follow the calling convention")

// A ReplyError reports a script reply that does not follow the calling convention: what
// arrived, shortened, and what is wrong with it. It wraps [ErrBadReply]. Stores return it
// for the replies of scripts of their own too (the semaphore's).
type ReplyError struct {
	Reply   any    // the reply as the Redis client returned it
	Problem string // what is wrong, e.g. "want an array of 7 integers"
}

func (e *ReplyError) Error() string {
	return "algo: script replied " + describeReply(e.Reply) + ": " + e.Problem
}

// Unwrap returns ErrBadReply.
func (e *ReplyError) Unwrap() error { return ErrBadReply }

// ParseDecision decodes the reply of an "apply" (see [Script]): seven integers (int64, as
// go-redis returns them over RESP2 and RESP3 alike). Durations of MaxMicros µs or more are
// Never. Anything else is a *[ReplyError] that says what arrived; it never panics.
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
		RetryAfter: toDuration(n[3]),
		ResetAfter: toDuration(n[4]),
		Wait:       toDuration(n[5]),
		At:         n[6],
	}, nil
}

// ParseRefund checks the reply of a "refund" (see [Script]): an integer. Anything else is a
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
