package distributed

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

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
		want  algo.Decision
	}{
		{"allowed", reply(1, 10, 9, 0, 100_000, 0, 1_767_225_600_000_000),
			algo.Decision{Allowed: true, Limit: 10, Remaining: 9, ResetAfter: 100 * time.Millisecond, At: 1_767_225_600_000_000}},
		{"reserved", reply(1, 10, 0, 0, 2_000_000, 1_500, 42),
			algo.Decision{Allowed: true, Limit: 10, ResetAfter: 2 * time.Second, Wait: 1500 * time.Microsecond, At: 42}},
		{"denied", reply(0, 10, 0, 250_000, 1_000_000, 0, 0),
			algo.Decision{Limit: 10, RetryAfter: 250 * time.Millisecond, ResetAfter: time.Second}},
		{"never", reply(0, 5, 5, algo.MaxMicros, 0, 0, 0),
			algo.Decision{Limit: 5, Remaining: 5, RetryAfter: algo.Never}},
		{"beyond MaxMicros", reply(0, 5, 5, algo.MaxMicros+1, algo.MaxMicros, 0, 0),
			algo.Decision{Limit: 5, Remaining: 5, RetryAfter: algo.Never, ResetAfter: algo.Never}},
	} {
		got, err := parseDecision(tc.reply)
		if err != nil {
			t.Errorf("%s: parseDecision(%v): %v", tc.name, tc.reply, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: parseDecision(%v) = %+v, want %+v", tc.name, tc.reply, got, tc.want)
		}
	}
}

// TestParseDecisionNeverPanics feeds random junk (fixed seed) to the parser: it must return
// an error wrapping errBadReply, or a Decision, and never panic.
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
		d, err := parseDecision(r)
		if err != nil && !errors.Is(err, errBadReply) {
			t.Fatalf("seed %d: parseDecision(%v) error %v does not wrap errBadReply", seed, r, err)
		}
		if err == nil && (d.Remaining < 0 || d.Limit < 0) {
			t.Fatalf("seed %d: parseDecision(%v) accepted %+v", seed, r, d)
		}
	}
}

func TestMaxWaitMicros(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   time.Duration
		want int64
	}{
		{-time.Second, 0},
		{0, 0},
		{999 * time.Nanosecond, 0},
		{1500 * time.Nanosecond, 1},
		{time.Second, 1_000_000},
		{algo.Forever, algo.MaxMicros},
		{time.Duration(algo.MaxMicros) * time.Microsecond, algo.MaxMicros},
	} {
		if got := maxWaitMicros(tc.in); got != tc.want {
			t.Errorf("maxWaitMicros(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}
