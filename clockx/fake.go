package clockx

import (
	"context"
	"sync"
	"time"
)

// Fake is a virtual clock: it only moves when told to, and Sleep moves it at once by the
// duration asked for. The zero value is not usable; create one with [NewFake].
//
// Fake is safe for concurrent use. Concurrent sleepers each advance the clock by their own
// duration, so a Fake suits single-threaded simulations and sequential tests.
type Fake struct {
	mu  sync.Mutex
	now time.Time
}

// NewFake returns a Fake clock that reads start.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

// Now returns the clock's current time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Sleep advances the clock by d (when d > 0) and returns at once. It returns ctx.Err()
// without moving the clock if ctx is already done.
func (f *Fake) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.Add(d)
	return nil
}

// Add moves the clock forward by d; a negative d moves it backwards, which tests use to
// check that time going backwards never creates permits.
func (f *Fake) Add(d time.Duration) {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
}

// Set moves the clock to t, forwards or backwards.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	f.now = t
	f.mu.Unlock()
}
