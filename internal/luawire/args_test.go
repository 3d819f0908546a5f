package luawire

import (
	"math"
	"testing"
)

func TestPaddedNow(t *testing.T) {
	for _, tc := range []struct {
		now, pad int64
		want     any
	}{
		{1_764_150_000_123_456, 250_000, "1764150000123456 250000"},
		{-5, 7, "-5 7"},
		{math.MaxInt64, math.MaxInt64, "9223372036854775807 9223372036854775807"},
		{42, 0, int64(42)},
		{42, -1, int64(42)},
	} {
		if got := PaddedNow(tc.now, tc.pad); got != tc.want {
			t.Errorf("PaddedNow(%d, %d) = %#v, want %#v", tc.now, tc.pad, got, tc.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = PaddedNow(1_764_150_000_123_456, 250_000) }); n > 2 {
		t.Errorf("PaddedNow: %v allocations, want ≤ 2 (the string and its box)", n)
	}
}
