package chart

import "testing"

func TestNiceStep(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		span  float64
		ticks int
		want  float64
	}{
		{30, 6, 5}, {50, 6, 10}, {20, 10, 2}, {10, 10, 1}, {13, 6, 5}, {0.9, 6, 0.2},
		{1000, 6, 200}, {0, 6, 1}, {7, 6, 2},
	} {
		if got := niceStep(tc.span, tc.ticks); got != tc.want {
			t.Errorf("niceStep(%g, %d) = %g, want %g", tc.span, tc.ticks, got, tc.want)
		}
	}
	for _, tc := range []struct {
		v, step float64
		want    string
	}{
		{0.30000000000000004, 0.1, "0.3"}, {15, 5, "15"}, {0.4, 0.2, "0.4"}, {2.5, 0.5, "2.5"},
	} {
		if got := tickLabel(tc.v, tc.step); got != tc.want {
			t.Errorf("tickLabel(%g, %g) = %q, want %q", tc.v, tc.step, got, tc.want)
		}
	}
}
