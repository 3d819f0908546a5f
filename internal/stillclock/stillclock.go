// Package stillclock is a clock for tests that must catch a goroutine while it sleeps:
// its time moves only when the test sets it, and its Sleep blocks until the sleeper's
// context ends. (clockx.Fake, whose Sleep advances the clock at once, cannot hold a
// sleeper.)
package stillclock

import (
	"context"
	"sync"
	"time"
)

// Clock reads the time last set and never wakes a sleeper: Sleep(ctx, d) with d > 0
// returns ctx's error once ctx is done. It implements clockx.Clock and is safe for
// concurrent use.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// New returns a Clock reading start.
func New(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the time last set.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Set moves the clock to t; it wakes no sleeper.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// Sleep returns ctx.Err() at once if ctx is done or d ≤ 0 (nil then if ctx is live),
// and otherwise blocks until ctx is done.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil || d <= 0 {
		return err
	}
	<-ctx.Done()
	return ctx.Err()
}
