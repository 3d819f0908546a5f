package local

import (
	"sync"
	"testing"
)

// TestKeyLockExcludes checks that keyLock admits one holder at a time and that Unlock
// lets the next one in: goroutines increment a plain counter under it, and every
// increment must count (go test -race also checks the happens-before of Unlock to Lock).
func TestKeyLockExcludes(t *testing.T) {
	t.Parallel()
	const goroutines, rounds = 8, 20_000
	var (
		mu keyLock
		n  int
		wg sync.WaitGroup
	)
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				mu.Lock()
				v := n
				for i := 0; i < 3; i++ {
					v++ // a read-modify-write spread out, so overlapping holders lose counts
				}
				n = v - 2
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if got, want := n, goroutines*rounds; got != want {
		t.Fatalf("counted %d increments, want %d", got, want)
	}
}
