package algo

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The Go side of the calling convention (lua.go): the ARGV a store sends and the decoding
// of the replies. The scripts' side is tested on a real Redis (lua_test.go and the
// differential tests, which send these ARGV and decode with ParseDecision).

func TestApplyArgs(t *testing.T) {
	t.Parallel()
	cfg := []any{int64(5), int64(1_000_000)}
	if got, want := ApplyArgs(nil, 1_700_000_000_000_000, Request{N: 2, MaxWait: 1500 * time.Microsecond}, cfg),
		[]any{"apply", int64(1_700_000_000_000_000), int64(2), int64(1500), int64(5), int64(1_000_000)}; !reflect.DeepEqual(got, want) {
		t.Errorf("ApplyArgs = %#v, want %#v", got, want)
	}
	if got, want := ApplyArgs([]any{"x"}, ServerTime, Request{N: 1}, nil), []any{"x", "apply", "", int64(1), int64(0)}; !reflect.DeepEqual(got, want) {
		t.Errorf("ApplyArgs at ServerTime = %#v, want %#v", got, want)
	}
	// ARGV[4] is MaxWait as the Go transitions read it: rounded down to whole µs, ≤ 0 is
	// 0, Forever and anything from MaxMicros µs on is MaxMicros-1.
	for _, tc := range []struct {
		in   time.Duration
		want int64
	}{
		{-time.Second, 0},
		{0, 0},
		{999 * time.Nanosecond, 0},
		{1500 * time.Nanosecond, 1},
		{time.Second, 1_000_000},
		{time.Duration(MaxMicros-1) * time.Microsecond, MaxMicros - 1},
		{Forever, MaxMicros - 1},
		{time.Duration(MaxMicros) * time.Microsecond, MaxMicros - 1},
	} {
		args := ApplyArgs(nil, 0, Request{N: 1, MaxWait: tc.in}, nil)
		if got := args[3]; got != tc.want || (Request{MaxWait: tc.in}).maxWaitMicros() != tc.want {
			t.Errorf("MaxWait %v: ARGV[4] = %v, want %d (as the Go transitions read it)", tc.in, got, tc.want)
		}
	}
}

func TestRefundArgs(t *testing.T) {
	t.Parallel()
	if got, want := RefundArgs(nil, 42, 3, 40, []any{"0.5"}), []any{"refund", int64(42), int64(3), int64(40), "0.5"}; !reflect.DeepEqual(got, want) {
		t.Errorf("RefundArgs = %#v, want %#v", got, want)
	}
	if got := RefundArgs(nil, ServerTime, 1, 7, nil)[1]; got != "" {
		t.Errorf("RefundArgs at ServerTime: now = %#v, want \"\"", got)
	}
	if err := ParseRefund(int64(0)); err != nil {
		t.Errorf("ParseRefund(0) = %v", err)
	}
	if err := ParseRefund("OK"); !errors.Is(err, ErrBadReply) || !strings.Contains(err.Error(), `"OK"`) {
		t.Errorf(`ParseRefund("OK") = %v, want ErrBadReply showing the reply`, err)
	}
}

func TestParseDecision(t *testing.T) {
	t.Parallel()
	reply := func(v ...int64) []any {
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = x
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		reply []any
		want  Decision
	}{
		{"allowed", reply(1, 10, 9, 0, 100_000, 0, 1_767_225_600_000_000),
			Decision{Allowed: true, Limit: 10, Remaining: 9, ResetAfter: 100 * time.Millisecond, At: 1_767_225_600_000_000}},
		{"reserved", reply(1, 10, 0, 0, 2_000_000, 1_500, 42),
			Decision{Allowed: true, Limit: 10, ResetAfter: 2 * time.Second, Wait: 1500 * time.Microsecond, At: 42}},
		{"denied", reply(0, 10, 0, 250_000, 1_000_000, 0, 0),
			Decision{Limit: 10, RetryAfter: 250 * time.Millisecond, ResetAfter: time.Second}},
		{"never", reply(0, 5, 5, MaxMicros, 0, 0, 0),
			Decision{Limit: 5, Remaining: 5, RetryAfter: Never}},
		{"beyond MaxMicros", reply(0, 5, 5, MaxMicros+1, MaxMicros, 0, 0),
			Decision{Limit: 5, Remaining: 5, RetryAfter: Never, ResetAfter: Never}},
	} {
		got, err := ParseDecision(tc.reply)
		if err != nil {
			t.Errorf("%s: ParseDecision(%v): %v", tc.name, tc.reply, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: ParseDecision(%v) = %+v, want %+v", tc.name, tc.reply, got, tc.want)
		}
		// The same seven values packed, as a quick function replies them.
		vals := make([]float64, len(tc.reply))
		for i, v := range tc.reply {
			vals[i] = float64(v.(int64))
		}
		if got, err := ParseDecision(packedReply(vals...)); err != nil || got != tc.want {
			t.Errorf("%s packed: ParseDecision = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		reply   any
		mention string
	}{
		{reply(1, 2, 3), "an array of 3 [1 2 3]: want an array of 7 integers"},
		{[]any{int64(1), int64(1), int64(1), int64(0), int64(0), int64(0), "x"}, "element 7 is not an integer"},
		{reply(2, 1, 1, 0, 0, 0, 0), "allowed is 2, want 0 or 1"},
		{reply(1, 1, -1, 0, 0, 0, 0), "remaining is -1, want ≥ 0"},
		{nil, "replied nil"},
		{"junk", `replied "junk"`},
		{packedReply(1, 10, 9, 0, 0, 0), "or them packed in 57 bytes"},
		{"d" + packedReply(1, 10, 9, 0, 0, 0, 0)[1:], "or them packed in 57 bytes"},
		{packedReply(1, 10, 9.5, 0, 0, 0, 0), "value 3 is not an integer"},
		{packedReply(1, 10, 9, 0, math.NaN(), 0, 0), "value 5 is not an integer"},
		{packedReply(1, 10, 9, 0, 0, math.Inf(1), 0), "value 6 is not an integer"},
		{packedReply(2, 10, 9, 0, 0, 0, 0), "allowed is 2, want 0 or 1"},
		{packedReply(1, 10, -1, 0, 0, 0, 0), "remaining is -1, want ≥ 0"},
	} {
		_, err := ParseDecision(tc.reply)
		var re *ReplyError
		if !errors.Is(err, ErrBadReply) || !errors.As(err, &re) || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("ParseDecision(%#v) = %v, want a *ReplyError wrapping ErrBadReply mentioning %q", tc.reply, err, tc.mention)
		}
	}
}

// packedReply is a quick function's reply of vals (see luawire.RateLibrary): 'D' and seven
// little-endian doubles.
func packedReply(vals ...float64) string {
	b := []byte{'D'}
	for _, v := range vals {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return string(b)
}

// TestParseDecisionNeverPanics feeds random junk (fixed seed) to the parser: it must return
// an error wrapping ErrBadReply, or a Decision, and never panic.
func TestParseDecisionNeverPanics(t *testing.T) {
	t.Parallel()
	const seed = 99
	rng := rand.New(rand.NewPCG(seed, 0))
	var junk func(depth int) any
	junk = func(depth int) any {
		switch rng.IntN(7) {
		case 0:
			return nil
		case 1:
			if rng.IntN(2) == 0 { // a packed reply with random values
				v := make([]float64, 7)
				for i := range v {
					v[i] = float64(rng.IntN(5)-2) * []float64{1, 0.5, 1e300}[rng.IntN(3)]
				}
				return packedReply(v...)
			}
			return "x"
		case 2:
			return rng.Float64()
		case 3:
			return int64(rng.IntN(5)) - 2
		case 4:
			return true
		default:
			if depth > 2 {
				return int64(1)
			}
			n := rng.IntN(9)
			a := make([]any, n)
			for i := range a {
				a[i] = junk(depth + 1)
			}
			return a
		}
	}
	for i := 0; i < 10000; i++ {
		r := junk(0)
		d, err := ParseDecision(r)
		if err != nil && !errors.Is(err, ErrBadReply) {
			t.Fatalf("seed %d: ParseDecision(%v) error %v does not wrap ErrBadReply", seed, r, err)
		}
		if err == nil && (d.Remaining < 0 || d.Limit < 0) {
			t.Fatalf("seed %d: ParseDecision(%v) accepted %+v", seed, r, d)
		}
	}
}
