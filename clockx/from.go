package clockx

import (
	"context"
	"time"

	"github.com/benbjohnson/clock"
)

// From adapts a github.com/benbjohnson/clock Clock to a Clock: Now reads c.Now(), and
// Sleep waits on a c.Timer(d), so it returns only when c's time has moved d ahead (or ctx
// ends first). A test that drives its code with a *clock.Mock passes From(mock) to the
// limiter's WithClock options and drives the limiter with the same mock: a Wait sleeps
// until the test moves the mock with Add or Set, which a [Fake] cannot do (its Sleep moves
// virtual time itself and returns at once). From(clock.New()) is the real clock.
//
// Sleep keeps the contract of Clock: a d ≤ 0 returns at once, and a done ctx returns
// ctx.Err(). From(nil) returns nil, which every WithClock option of the module rejects as
// an invalid config.
func From(c clock.Clock) Clock {
	if c == nil {
		return nil
	}
	return fromClock{c}
}

type fromClock struct{ c clock.Clock }

func (f fromClock) Now() time.Time { return f.c.Now() }

func (f fromClock) Sleep(ctx context.Context, d time.Duration) error {
	return sleep(ctx, d, func(d time.Duration) (<-chan time.Time, func() bool) {
		t := f.c.Timer(d)
		return t.C, t.Stop
	})
}
