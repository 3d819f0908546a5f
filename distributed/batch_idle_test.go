package distributed_test

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
)

// TestBatchingFlushersExitWhenIdle: batching is the default, so a store that is never
// closed must not keep goroutines: once its callers are done, every flusher exits, and
// Close returns. Bursts of concurrent calls make flushers start, wait for a slot and race
// for the queue; after each burst the test polls (bounded) until none runs. A flusher left
// waiting for a slot that no one will signal fails it, and would hang Close.
func TestBatchingFlushersExitWhenIdle(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := ctxTimeout(t, time.Minute)
	a := counter{Limit: 1 << 40}
	for _, inFlight := range []int{1, 2, 3} {
		s := newStore(t, c, distributed.WithPrefix(freshPrefix()),
			distributed.WithBatching(distributed.Batching{MaxBatch: 2, MaxInFlight: inFlight}))
		for burst := 0; burst < 40; burst++ {
			var wg sync.WaitGroup
			for g := 0; g < 16; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 4; i++ {
						if _, err := s.Apply(ctx, "k"+strconv.Itoa(g), a, algo.Request{N: 1}); err != nil {
							t.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			waitFor(t, func() bool { return distributed.Flushers(s) == 0 }, func() string {
				return fmt.Sprintf("MaxInFlight %d, burst %d: %d flushers still run with no call queued or in flight",
					inFlight, burst, distributed.Flushers(s))
			})
		}
		closed := make(chan struct{})
		go func() { _ = s.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(20 * time.Second):
			t.Fatalf("MaxInFlight %d: Close did not return", inFlight)
		}
	}
}
