package storetest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

// runIndependence checks what shares state and what does not: different keys never do,
// different slots on one key never do, and the same slot with a changed config does.
func runIndependence(t *testing.T, f Factory) {
	t.Run("Keys", func(t *testing.T) {
		t.Parallel()
		for i, a := range algo.Samples() {
			h := newHarness(t, f, startFor(int64(6000+i)))
			limit := limitOf(a)
			for _, key := range []string{"x", "y", "z"} {
				if d := h.apply(key, a, algo.Request{N: limit}); !d.Allowed {
					t.Fatalf("%v: key %q, first request for the whole limit denied: %s", a, key, describe(d))
				}
			}
		}
	})
	t.Run("Slots", func(t *testing.T) {
		t.Parallel()
		// Every pair on one key has a different Slot; exhausting one must leave the other intact.
		groups := [][]algo.Algorithm{
			{algo.FixedWindow{Limit: 2, Window: time.Second}, algo.FixedWindow{Limit: 2, Window: 2 * time.Second},
				algo.FixedWindow{Limit: 2, Window: time.Hour}},
			{algo.SlidingWindowLog{Limit: 2, Window: time.Second}, algo.SlidingWindowLog{Limit: 2, Window: 2 * time.Second}},
			{algo.SlidingWindowCounter{Limit: 2, Window: time.Second}, algo.SlidingWindowCounter{Limit: 2, Window: 2 * time.Second}},
			{algo.FixedWindow{Limit: 2, Window: time.Second}, algo.SlidingWindowLog{Limit: 2, Window: time.Second},
				algo.SlidingWindowCounter{Limit: 2, Window: time.Second}, algo.TokenBucket{Rate: 1, Burst: 2},
				algo.LeakyBucket{Rate: 1, Capacity: 2}, algo.GCRA{Rate: 1, Burst: 2}},
		}
		for gi, group := range groups {
			h := newHarness(t, f, epoch)
			for _, a := range group {
				if d := h.apply("k", a, algo.Request{N: 2}); !d.Allowed {
					t.Errorf("group %d: %v on a key used by other slots: first request denied: %s", gi, a, describe(d))
				}
				if d := h.apply("k", a, algo.Request{N: 1}); d.Allowed {
					t.Errorf("group %d: %v: second request allowed: %s", gi, a, describe(d))
				}
			}
		}
	})
	t.Run("SameSlotKeepsState", func(t *testing.T) {
		t.Parallel()
		h := newHarness(t, f, epoch)
		// A token bucket whose rate changes keeps its tokens: empty stays empty. Until its
		// next write it refills at the lower of its old and new rates (10/s).
		h.apply("tb", algo.TokenBucket{Rate: 10, Burst: 5}, algo.Request{N: 5})
		fast := algo.TokenBucket{Rate: 1000, Burst: 5}
		if d := h.apply("tb", fast, algo.Request{N: 1}); d.Allowed || d.RetryAfter != 100*time.Millisecond {
			t.Errorf("rate changed to 1000/s on an empty bucket: %s, want a denial with RetryAfter 100ms", describe(d))
		}
		// A larger burst does not refill it either.
		if d := h.apply("tb", algo.TokenBucket{Rate: 10, Burst: 50}, algo.Request{N: 1}); d.Allowed {
			t.Errorf("burst raised on an empty bucket: allowed %s", describe(d))
		}
		h.clk.Add(100 * time.Millisecond)
		if d := h.apply("tb", fast, algo.Request{N: 1}); !d.Allowed {
			t.Errorf("100ms later: denied %s", describe(d))
		}
		h.clk.Add(time.Millisecond) // the grant wrote 1000/s
		if d := h.apply("tb", fast, algo.Request{N: 1}); !d.Allowed {
			t.Errorf("1ms later at 1000/s: denied %s", describe(d))
		}
		// GCRA likewise keeps its TAT.
		h.apply("gcra", algo.GCRA{Rate: 10, Burst: 5}, algo.Request{N: 5})
		if d := h.apply("gcra", algo.GCRA{Rate: 1000, Burst: 5}, algo.Request{N: 1}); d.Allowed {
			t.Errorf("GCRA rate changed on an exhausted key: allowed %s", describe(d))
		}
		// A fixed window whose limit is raised keeps its count.
		h.clk.Set(epoch)
		h.apply("fw", algo.FixedWindow{Limit: 3, Window: time.Second}, algo.Request{N: 3})
		more := algo.FixedWindow{Limit: 5, Window: time.Second}
		if d := h.apply("fw", more, algo.Request{N: 2}); !d.Allowed || d.Remaining != 0 {
			t.Errorf("limit raised from 3 to 5 after 3 grants: %s, want allowed with Remaining 0", describe(d))
		}
		if d := h.apply("fw", more, algo.Request{N: 1}); d.Allowed {
			t.Errorf("limit raised from 3 to 5 after 5 grants: allowed %s", describe(d))
		}
	})
}

// runConcurrency hammers one key from many goroutines with the clock frozen: exactly the
// bound is admitted. Run it under -race.
func runConcurrency(t *testing.T, f Factory) {
	const goroutines, attempts = 8, 40
	for _, a := range []algo.Algorithm{
		algo.FixedWindow{Limit: 100, Window: time.Hour},
		algo.TokenBucket{Rate: 1e-6, Burst: 100},
		algo.GCRA{Rate: 1e-6, Burst: 100},
		algo.LeakyBucket{Rate: 1e-6, Capacity: 100},
		algo.SlidingWindowLog{Limit: 100, Window: time.Hour},
		algo.SlidingWindowCounter{Limit: 100, Window: time.Hour},
	} {
		t.Run(fmt.Sprintf("%v", a), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, f, epoch)
			var allowed, reserved atomic.Int64
			var wg sync.WaitGroup
			errs := make(chan error, 2*goroutines)
			for g := 0; g < goroutines; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < attempts; i++ {
						// Each goroutine also works on a key of its own, so calls on
						// different keys run concurrently too.
						own := fmt.Sprintf("own-%d", g)
						if _, err := h.s.Apply(h.ctx, own, a, algo.Request{N: 1}); err != nil {
							errs <- err
							return
						}
						d, err := h.s.Apply(h.ctx, "hot", a, algo.Request{N: 1})
						if err != nil {
							errs <- err
							return
						}
						if d.Allowed {
							allowed.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			// Reservations against the exhausted key must queue, not overdraw: with
			// MaxWait 1ms nothing is freed in time.
			for g := 0; g < goroutines; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					d, err := h.s.Apply(h.ctx, "hot", a, algo.Request{N: 1, MaxWait: time.Millisecond})
					if err != nil {
						errs <- err
						return
					}
					if d.Allowed {
						reserved.Add(1)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("Apply: %v", err)
			}
			if got, want := allowed.Load(), limitOf(a); got != want {
				t.Fatalf("%d goroutines × %d requests on one key admitted %d, want exactly %d", goroutines, attempts, got, want)
			}
			if got := reserved.Load(); got != 0 {
				t.Fatalf("%d reservations with MaxWait 1ms were granted on an exhausted key", got)
			}
		})
	}
}
