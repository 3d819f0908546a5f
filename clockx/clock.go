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
	return sleep(ctx, d, func(d time.Duration) (<-chan time.Time, func() bool) {
		t := time.NewTimer(d)
		return t.C, t.Stop
	})
}

// sleep is the Sleep of a clock whose timer(d) returns a channel that delivers when d has
// passed on the clock, and the function that stops it: it keeps the contract of Clock.
func sleep(ctx context.Context, d time.Duration, timer func(time.Duration) (<-chan time.Time, func() bool)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	c, stop := timer(d)
	defer stop()
	select {
	case <-c:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
