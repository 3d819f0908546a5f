package stillclock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/stillclock"
)

var _ clockx.Clock = (*stillclock.Clock)(nil)

func TestSleepBlocksUntilCancelled(t *testing.T) {
	t.Parallel()
	start := time.Unix(1000, 0)
	c := stillclock.New(start)
	if err := c.Sleep(context.Background(), 0); err != nil {
		t.Fatalf("Sleep(0) = %v, want nil", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Sleep(ctx, time.Nanosecond) }()
	c.Set(start.Add(time.Hour)) // moving the clock wakes nobody
	select {
	case err := <-done:
		t.Fatalf("Sleep returned %v before its context ended", err)
	default:
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep after cancel = %v, want context.Canceled", err)
	}
	if got, want := c.Now(), start.Add(time.Hour); !got.Equal(want) {
		t.Fatalf("Now() = %v, want %v", got, want)
	}
}
