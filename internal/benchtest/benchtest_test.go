package benchtest

import (
	"context"
	"sync"
	"testing"
)

func BenchmarkDecisions(b *testing.B) {
	var mu sync.Mutex
	seen := map[string]int{}
	Decisions(b, 4, []string{"a", "b", "c"}, func(_ context.Context, key string) error {
		mu.Lock()
		seen[key]++
		mu.Unlock()
		return nil
	})
	if b.N >= 3 && len(seen) < 2 {
		b.Errorf("%d calls over %d keys", b.N, len(seen))
	}
}
