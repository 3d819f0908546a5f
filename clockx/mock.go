package clockx

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"
)

// Mock is a manual clock whose Sleep blocks until the test moves the clock past the
// sleeper's deadline (or the context ends). Create one with [NewMock]; it starts at the Unix
// epoch, so call Set for another start.
type Mock struct {
	m *clock.Mock
}

// NewMock returns a Mock clock reading the Unix epoch.
func NewMock() *Mock { return &Mock{m: clock.NewMock()} }

// Now returns the clock's current time.
func (m *Mock) Now() time.Time { return m.m.Now() }

// Sleep blocks until the clock has moved d forward or ctx is done.
func (m *Mock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	t := m.m.Timer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Add moves the clock forward by d, waking every sleeper whose deadline has passed.
func (m *Mock) Add(d time.Duration) { m.m.Add(d) }

// Set moves the clock to t, waking every sleeper whose deadline has passed.
func (m *Mock) Set(t time.Time) { m.m.Set(t) }
