package limiter_test

import (
	"context"
	"errors"
	"time"
)

// nearDeadline calls f with a context whose deadline is d away (real time), as the tests
// of a deadline nearer than a wait do. On a loaded machine the deadline may pass before f
// even reads it, and f then rightly returns the context's error: such an attempt is made
// again with a new deadline, up to 20 times, so only a stall of d on every attempt makes
// the test fail. f must reserve nothing when it returns the context's error (the callers
// check the clock and the keys afterwards).
func nearDeadline(ctx context.Context, d time.Duration, f func(context.Context) error) error {
	var err error
	for try := 0; try < 20; try++ {
		dctx, cancel := context.WithTimeout(ctx, d)
		err = f(dctx)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
	}
	return err
}
