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

func TestMockSleepBlocksUntilAdvanced(t *testing.T) {
	t.Parallel()
	m := clockx.NewMock()
	done := make(chan error, 1)
	ctx := context.Background()
	go func() { done <- m.Sleep(ctx, time.Second) }()
	// Advance in small steps until the sleeper wakes: the goroutine may not have
	// registered its timer yet, so a single Add could happen before it.
	for i := 0; ; i++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			if m.Now().Before(time.Unix(1, 0)) {
				t.Fatalf("sleeper woke at %v, before its deadline", m.Now())
			}
			return
		default:
		}
		if i > 100_000 {
			t.Fatal("sleeper never woke")
		}
		m.Add(50 * time.Millisecond)
	}
}

func TestMockSleepCancelled(t *testing.T) {
	t.Parallel()
	m := clockx.NewMock()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Sleep(ctx, time.Hour) }()
	cancel()
	if err := <-done; err == nil {
		t.Fatal("Sleep returned nil after cancel")
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
