package clockx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/ratekit/limiter/clockx"
)

// driveUntil moves mock forward by step until woke delivers, and returns what it delivered.
// It fails after limit steps. The sleeper may register its timer after some steps: that only
// makes it wake later on the mock, never earlier.
func driveUntil[T any](t *testing.T, mock *clock.Mock, step time.Duration, limit int, woke <-chan T) T {
	t.Helper()
	for range limit {
		select {
		case v := <-woke:
			return v
		default:
			mock.Add(step)
		}
	}
	t.Fatalf("the sleeper did not wake after the mock moved %v", time.Duration(limit)*step)
	var zero T
	return zero
}

func TestFromSleepReturnsOnlyAfterMockAdd(t *testing.T) {
	t.Parallel()
	mock := clock.NewMock()
	start := mock.Now()
	c := clockx.From(mock)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now() = %v, want the mock's %v", got, start)
	}

	type wake struct {
		at  time.Time
		err error
	}
	woke := make(chan wake, 1)
	go func() {
		err := c.Sleep(context.Background(), time.Second)
		woke <- wake{mock.Now(), err}
	}()
	w := driveUntil(t, mock, 100*time.Millisecond, 1000, woke)
	if w.err != nil {
		t.Fatalf("Sleep = %v, want nil", w.err)
	}
	if min := start.Add(time.Second); w.at.Before(min) {
		t.Fatalf("Sleep(1s) returned at %v on the mock, before %v: it did not wait for the mock", w.at, min)
	}
}

func TestFromSleepContext(t *testing.T) {
	t.Parallel()
	mock := clock.NewMock()
	c := clockx.From(mock)

	if err := c.Sleep(context.Background(), 0); err != nil {
		t.Fatalf("Sleep(0) = %v, want nil", err)
	}
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Sleep(done, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on a done context = %v, want context.Canceled", err)
	}
	if err := c.Sleep(done, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep(0) on a done context = %v, want context.Canceled", err)
	}

	// A context ending during the sleep ends it, with the mock standing still.
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Sleep(ctx, time.Hour) }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep cancelled while waiting = %v, want context.Canceled", err)
	}
}

func TestFromNil(t *testing.T) {
	t.Parallel()
	if c := clockx.From(nil); c != nil {
		t.Fatalf("From(nil) = %v, want nil", c)
	}
}
