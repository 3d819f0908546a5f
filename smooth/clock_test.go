package smooth_test

import (
	"context"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/smooth"
)

// TestSmoothSleepsOnStoreClock checks which clock Acquire sleeps on with WithStore: the
// store's by default (store.Clocked), WithClock's when given.
func TestSmoothSleepsOnStoreClock(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, override := range []bool{false, true} {
		storeClk, ownClk := clockx.NewFake(start), clockx.NewFake(start)
		st := teststore.Local(t, local.WithClock(storeClk), local.WithSweepInterval(0))
		opts := []smooth.Option{smooth.WithStore(st, "k")}
		if override {
			opts = append(opts, smooth.WithClock(ownClk))
		}
		l, err := smooth.New(algo.SmoothBursty{Rate: 2}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		if _, err := l.Acquire(ctx, 1); err != nil { // free: the first after idleness
			t.Fatal(err)
		}
		slept, err := l.Acquire(ctx, 1) // waits 1/rate for the first
		if err != nil {
			t.Fatal(err)
		}
		on, idle := storeClk, ownClk
		if override {
			on, idle = ownClk, storeClk
		}
		if got, want := on.Now().Sub(start), 500*time.Millisecond; slept != want || got != want {
			t.Errorf("override=%v: slept %v, the clock slept on moved %v, want %v", override, slept, got, want)
		}
		if got := idle.Now().Sub(start); got != 0 {
			t.Errorf("override=%v: the other clock moved %v, want 0", override, got)
		}
		_ = st.Close()
	}
}
