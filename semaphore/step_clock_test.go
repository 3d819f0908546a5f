package semaphore_test

import (
	"context"
	"sync"
	"testing"
	"time"
)

// stepClock is a manual clock for tests of goroutines that sleep on it (a blocked Acquire's
// polls, a KeepAlive's renewals). Sleep registers its deadline under the lock Add takes, and
// the test can see how many goroutines are asleep: advanceUntil moves time only once every
// sleeper it expects is asleep, so no step is taken while a goroutine is still on its way
// to its next sleep, however late the scheduler runs it.
type stepClock struct {
	mu      sync.Mutex
	now     time.Time
	sleeps  map[chan struct{}]time.Time // wake channel → deadline
	changed chan struct{}               // one pending signal: a sleeper came or went
}

func newStepClock(now time.Time) *stepClock {
	return &stepClock{now: now, sleeps: map[chan struct{}]time.Time{}, changed: make(chan struct{}, 1)}
}

// Now returns the clock's time.
func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep blocks until the clock has moved d forward or ctx is done.
func (c *stepClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	wake := make(chan struct{})
	c.mu.Lock()
	c.sleeps[wake] = c.now.Add(d)
	c.mu.Unlock()
	c.signal()
	select {
	case <-wake:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.sleeps, wake)
		c.mu.Unlock()
		c.signal()
		return ctx.Err()
	}
}

// Add moves the clock forward by d, waking every sleeper whose deadline has come.
func (c *stepClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for wake, until := range c.sleeps {
		if !until.After(c.now) {
			close(wake)
			delete(c.sleeps, wake)
		}
	}
}

// asleep returns the number of goroutines sleeping on the clock.
func (c *stepClock) asleep() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sleeps)
}

func (c *stepClock) signal() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// advanceUntil moves m forward by step until cond holds, failing after limit steps. Before
// each step it waits until sleepers goroutines are asleep on m (or cond holds): the
// goroutines under test must all have reached their next sleep, whatever the scheduler
// did. The wait is bounded by 10 s of real time, against a hang only.
func advanceUntil(t *testing.T, m *stepClock, step time.Duration, sleepers, limit int, what string, cond func() bool) {
	t.Helper()
	hang := time.Now().Add(10 * time.Second)
	for i := 0; ; i++ {
		for { // cond is called once per check: it may receive from a channel
			if cond() {
				return
			}
			if m.asleep() >= sleepers {
				break
			}
			if time.Now().After(hang) {
				t.Fatalf("%s: %d of %d goroutines asleep after 10 s, and not done", what, m.asleep(), sleepers)
			}
			select {
			case <-m.changed:
			case <-time.After(time.Millisecond): // cond may change without a sleep
			}
		}
		if i == limit {
			t.Fatalf("%s: not after %d steps of %v", what, limit, step)
		}
		m.Add(step)
	}
}
