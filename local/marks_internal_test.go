package local

import (
	"fmt"
	"testing"

	"github.com/ratekit/limiter/internal/resetmark"
)

// TestMarksStayBounded: a store whose sweeper is off, resetting ever new keys, keeps every
// live mark and forgets ended ones as the map grows, so it does not grow with every key
// ever reset.
func TestMarksStayBounded(t *testing.T) {
	var ms marks
	live := resetmark.Mark{At: 0, Until: 1 << 60}
	ms.put("live", "s", live)
	for i := range 100_000 {
		now := int64(10 * i)
		ms.put(fmt.Sprintf("k%d", i), "s", resetmark.Mark{At: now, Until: now + 5})
	}
	if n := len(ms.m); n > 2*minSweep+1 {
		t.Errorf("%d marks held after 100,000 Resets of new keys, each ended by the next; want at most %d", n, 2*minSweep+1)
	}
	if int(ms.held.Load()) != len(ms.m) {
		t.Errorf("held = %d, len = %d", ms.held.Load(), len(ms.m))
	}
	if !ms.drops("live", "s", 1_000_000, -1) {
		t.Error("the live mark was forgotten")
	}
}
