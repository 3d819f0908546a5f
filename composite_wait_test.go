package limiter_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
)

// TestAllReserveAndCancel: the composite reservation waits for the slowest rule, and
// Cancel gives every rule its permits back.
func TestAllReserveAndCancel(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"one store", "two stores"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			clk := clockx.NewFake(start)
			st1 := newLocal(t, clk)
			st2 := st1
			if mode == "two stores" {
				st2 = newLocal(t, clk)
			}
			fast := mustNew(t, st1, algo.GCRA{Rate: 10, Burst: 1}, limiter.WithClock(clk))
			slow := mustNew(t, st2, algo.TokenBucket{Rate: 2, Burst: 1}, limiter.WithClock(clk))
			all := mustAll(t, fast, slow)
			for _, k := range []string{"a", "b"} {
				allowN(t, all, k, 1)
			}
			r, err := all.Reserve(ctx, "a", 1, time.Second)
			if err != nil || !r.OK() {
				t.Fatalf("Reserve: %v %v", r, err)
			}
			if got, want := r.Delay(), 500*time.Millisecond; got != want || r.Decision().Wait != want {
				t.Errorf("Delay = %v (Decision %+v), want %v: the slow rule's wait", got, r.Decision(), want)
			}
			if r2, _ := all.Reserve(ctx, "a", 1, 900*time.Millisecond); r2.OK() || r2.Decision().RetryAfter != 100*time.Millisecond {
				t.Errorf("second Reserve: %+v, want denied with RetryAfter 100ms", r2.Decision())
			}
			if err := r.Cancel(ctx); err != nil {
				t.Fatal(err)
			}
			// "a" after the cancel and "b", which never reserved, decide alike.
			for i := 0; i < 5; i++ {
				ra, _ := all.Reserve(ctx, "a", 1, time.Second)
				rb, _ := all.Reserve(ctx, "b", 1, time.Second)
				if ra.Decision() != rb.Decision() {
					t.Fatalf("step %d: a %+v, b %+v", i, ra.Decision(), rb.Decision())
				}
				clk.Add(300 * time.Millisecond)
			}
		})
	}
}

// TestAllWaitPacesAtTheTighterRule: WaitN sleeps on the fake clock until every rule
// grants, so a loop of Wait calls never exceeds the window's 4 per second. (Each rule
// reserves on its own: the GCRA's slot may come before the window's, and the request then
// acts at the later time, next to a request whose GCRA slot is that time.)
func TestAllWaitPacesAtTheTighterRule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clockx.NewFake(start)
	st := newLocal(t, clk)
	all := mustAll(t,
		mustNew(t, st, algo.GCRA{Rate: 20, Burst: 1}, limiter.WithClock(clk)),
		mustNew(t, st, algo.FixedWindow{Limit: 4, Window: time.Second}, limiter.WithClock(clk)))
	perSecond := map[int64]int{}
	for i := 0; i < 12; i++ {
		if err := all.Wait(ctx, "k"); err != nil {
			t.Fatal(err)
		}
		perSecond[clk.Now().Unix()]++
	}
	for s, n := range perSecond {
		if n > 4 {
			t.Errorf("second %d holds %d grants, limit 4", s-start.Unix(), n)
		}
	}
	if got := clk.Now().Sub(start); got < 2*time.Second || got >= 3*time.Second {
		t.Errorf("12 Waits took %v, want within the third second", got)
	}

	// TryAcquire: 4 within the GCRA's 50ms each, then the window is full for 1s.
	clk.Set(start.Add(10 * time.Second))
	for i := 0; i < 4; i++ {
		if ok, err := all.TryAcquire(ctx, "t", 1, 50*time.Millisecond); err != nil || !ok {
			t.Fatalf("TryAcquire %d: %v %v", i, ok, err)
		}
	}
	if got, want := clk.Now().Sub(start), 10*time.Second+150*time.Millisecond; got != want {
		t.Errorf("4 TryAcquires slept until %v, want %v", got, want)
	}
	if ok, err := all.TryAcquire(ctx, "t", 1, 100*time.Millisecond); err != nil || ok {
		t.Errorf("TryAcquire with the window full: %v %v, want false", ok, err)
	}
	if ok, err := all.TryAcquire(ctx, "t", 2, time.Hour); !errors.Is(err, limiter.ErrExceedsLimit) || ok {
		t.Errorf("TryAcquire(2) over the GCRA's burst of 1: %v %v, want ErrExceedsLimit", ok, err)
	}
	tctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	if err := all.Wait(tctx, "t"); err != nil {
		t.Errorf("Wait with a deadline an hour away: %v", err)
	}
	tctx2, cancel2 := context.WithTimeout(ctx, time.Hour)
	defer cancel2()
	if err := all.WaitN(tctx2, "t", 4); !errors.Is(err, limiter.ErrExceedsLimit) {
		t.Errorf("WaitN(4): %v, want ErrExceedsLimit (GCRA burst 1)", err)
	}
}

// TestAllConcurrent: goroutines hammering one composite on one key at a frozen instant.
// On one store the rules are applied atomically: exactly the tighter bound is admitted,
// and the looser rules lose nothing to the denials. On two stores (refund semantics) the
// bound still holds, though a transient refund may deny a little more.
func TestAllConcurrent(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"one store", "two stores"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			clk := clockx.NewFake(start)
			st1 := newLocal(t, clk)
			st2 := st1
			if mode == "two stores" {
				st2 = newLocal(t, clk)
			}
			loose := mustNew(t, st1, algo.TokenBucket{Rate: 1, Burst: 60})
			all := mustAll(t, loose,
				mustNew(t, st2, algo.Named(algo.TokenBucket{Rate: 1, Burst: 37}, "tight")),
				mustNew(t, st1, algo.FixedWindow{Limit: 100, Window: time.Second}))
			got := allowConcurrently(t, all, "hot", 16, 40)
			if got > 37 || (mode == "one store" && got != 37) {
				t.Errorf("%d of 640 calls granted, want exactly 37 (at most, with refunds)", got)
			}
			if d := allowN(t, loose, "hot", 60-got); !d.Allowed || d.Remaining != 0 {
				t.Errorf("loose bucket after the run: %+v, want exactly %d left", d, 60-got)
			}
		})
	}
}
