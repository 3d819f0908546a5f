package clockx_test

import (
	"context"
	"testing"
	"time"

	"github.com/ratekit/limiter/clockx"
)

func TestFakeSleepAdvances(t *testing.T) {
	t.Parallel()
	start := time.Unix(1000, 0)
	f := clockx.NewFake(start)
	if err := f.Sleep(context.Background(), 3*time.Second); err != nil {
		t.Fatal(err)
	}
	if got, want := f.Now(), start.Add(3*time.Second); !got.Equal(want) {
		t.Fatalf("Now() = %v, want %v", got, want)
	}
	f.Add(-time.Second)
	if got, want := f.Now(), start.Add(2*time.Second); !got.Equal(want) {
		t.Fatalf("after Add(-1s) Now() = %v, want %v", got, want)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := f.Sleep(ctx, time.Hour); err == nil {
		t.Fatal("Sleep with a cancelled context returned nil")
	}
	if got, want := f.Now(), start.Add(2*time.Second); !got.Equal(want) {
		t.Fatalf("cancelled Sleep moved the clock to %v", got)
	}
}

func TestRealSleep(t *testing.T) {
	t.Parallel()
	c := clockx.Real()
	if err := c.Sleep(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Sleep(ctx, time.Hour); err == nil {
		t.Fatal("Sleep with a cancelled context returned nil")
	}
}
