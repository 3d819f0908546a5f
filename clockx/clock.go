package clockx

import (
	"context"
	"time"
)

// Clock is a time source that can also sleep.
//
// Sleep returns nil after d has passed on the clock, or ctx.Err() if ctx is done first.
// A d ≤ 0 returns at once (with ctx.Err() if ctx is already done).
type Clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

// Real returns the system clock.
func Real() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
