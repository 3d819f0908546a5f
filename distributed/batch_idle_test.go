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

// TestBatchingWaitingFlusherExits replays, step by step, the interleaving that left a
// flusher waiting for a pipeline slot forever (and Close waiting for it): a flusher
// started for a queued call is held at its start while a second one takes the queue; it
// then finds both slots busy and waits; the second flusher sends everything, finds the
// queue empty and leaves. The waiting flusher must leave too: nothing will ever signal it.
func TestBatchingWaitingFlusherExits(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	g := newGate(c)
	s := newStore(t, c, distributed.WithClientClock(fakeClock()),
		distributed.WithBatching(distributed.Batching{MaxInFlight: 2}))
	ctx := ctxTimeout(t, time.Minute)
	a := counter{Limit: 1 << 40}
	if _, err := s.Apply(ctx, "warm", a, algo.Request{N: 1}); err != nil { // loads the script
		t.Fatal(err)
	}

	first, held, let := true, make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	distributed.OnFlusherStart(s, func() {
		mu.Lock()
		hold := first
		first = false
		mu.Unlock()
		if hold {
			close(held)
			<-let
		}
	})
	var wg sync.WaitGroup
	apply := func(key string) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Apply(ctx, key, a, algo.Request{N: 1}); err != nil {
				t.Error(err)
			}
		}()
	}

	release := distributed.Busy(s) // one slot busy: the calls below queue
	g.hold()
	apply("q1")
	<-held // flusher 1 was started for q1 and is held at its start
	apply("q2")
	if names := g.wait(t); len(names) != 2 { // flusher 2 took q1 and q2: both slots busy
		t.Fatalf("flusher 2 sent %v, want q1 and q2", names)
	}
	apply("q3")
	waitQueued(t, s, 1)
	close(let) // flusher 1 finds q3 queued and no free slot: it waits
	waitFor(t, func() bool { return distributed.IdleFlushers(s) == 1 },
		func() string { return "flusher 1 is not waiting for a slot" })
	g.let()   // flusher 2's pipeline goes; it takes q3 next
	g.wait(t) // the pipeline of q3
	g.let()   // flusher 2 finds the queue empty and leaves
	release()
	wg.Wait()
	waitFor(t, func() bool { return distributed.Flushers(s) == 0 }, func() string {
		return fmt.Sprintf("%d flushers still run (%d waiting for a slot) with nothing queued or in flight",
			distributed.Flushers(s), distributed.IdleFlushers(s))
	})
	g.open()
}
