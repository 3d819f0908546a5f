package chart

import (
	"strings"
	"testing"
)

func TestWrapText(t *testing.T) {
	t.Parallel()
	s := "base rate 10/s for 20s; limit=10, window=1s, rate=10/s, burst=20, capacity=20, max-burst=2s, warmup=2s, cold-factor=3; allow mode"
	for _, width := range []float64{100, 300, 848, 5000} {
		lines := wrapText(s, width, FontSize, false)
		if got := strings.Join(lines, " "); got != s {
			t.Errorf("width %v: lines %q do not join back to the text", width, lines)
		}
		for _, l := range lines {
			if TextWidth(l, FontSize, false) > width && strings.Contains(l, " ") {
				t.Errorf("width %v: line %q is wider (%.0f)", width, l, TextWidth(l, FontSize, false))
			}
		}
	}
	if got := wrapText("", 100, FontSize, false); got != nil {
		t.Errorf("wrapText(\"\") = %q, want no line", got)
	}
}
