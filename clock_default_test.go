package limiter_test

import (
	"context"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
)

// TestNewSleepsOnStoreClock checks the facade's default clock: the store's (store.Clocked),
// so a Wait over a store on a fake clock sleeps on that clock; WithClock overrides it, and
// a composite sleeps on its first rule's.
func TestNewSleepsOnStoreClock(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ctx := context.Background()
	a := algo.TokenBucket{Rate: 1, Burst: 1}
	for _, tc := range []struct {
		name     string
		override bool
		all      bool
	}{{"default", false, false}, {"WithClock", true, false}, {"All", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			storeClk, ownClk := clockx.NewFake(start), clockx.NewFake(start)
			st := teststore.Local(t, local.WithClock(storeClk), local.WithSweepInterval(0))
			t.Cleanup(func() { _ = st.Close() })
			var opts []limiter.Option
			if tc.override {
				opts = append(opts, limiter.WithClock(ownClk))
			}
			l, err := limiter.New(st, a, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if tc.all {
				other, err := limiter.New(st, algo.Named(algo.TokenBucket{Rate: 10, Burst: 10}, "other"))
				if err != nil {
					t.Fatal(err)
				}
				if l, err = limiter.All(l, other); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.Wait(ctx, "k"); err != nil { // the burst: no sleep
				t.Fatal(err)
			}
			if err := l.Wait(ctx, "k"); err != nil { // one second on the clock slept on
				t.Fatal(err)
			}
			slept, idle := storeClk, ownClk
			if tc.override {
				slept, idle = ownClk, storeClk
			}
			if got, want := slept.Now().Sub(start), time.Second; got != want {
				t.Errorf("the clock slept on moved %v, want %v", got, want)
			}
			if got := idle.Now().Sub(start); got != 0 {
				t.Errorf("the other clock moved %v, want 0", got)
			}
		})
	}
}
