package distributed_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/store"
)

// TestStoreClock needs no server: Clock answers from the options.
func TestStoreClock(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = c.Close() })
	fake := clockx.NewFake(time.Unix(0, 0))
	for _, tc := range []struct {
		name string
		opts []distributed.Option
		want clockx.Clock
	}{
		{"server TIME", nil, clockx.Real()},
		{"nil option", []distributed.Option{nil}, clockx.Real()},
		{"client clock", []distributed.Option{distributed.WithClientClock(fake)}, fake},
	} {
		s := teststore.Redis(t, c, tc.opts...)
		var cl store.Clocked = s
		if got := cl.Clock(); got != tc.want {
			t.Errorf("%s: Clock() = %v, want %v", tc.name, got, tc.want)
		}
		_ = s.Close()
	}
}

// TestClientClockOutlivesNoKey is issue 21's case 8 end to end: a fixed window of 10 per
// second, a client clock that stands still 50 ms before its window ends, 10 grants, then
// more real time than the key's state needed by the client's clock. Redis used to expire
// the key when the window ended in real time, and 10 more requests at the same client
// instant were granted in a fresh count. The wait is only a lower bound: however much
// longer it takes, nothing more may be granted (past the tolerance the store refuses).
func TestClientClockOutlivesNoKey(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t) // expiring keys for real
	ctx := ctxTimeout(t, 60*time.Second)
	clk := clockx.NewFake(epoch.Add(950 * time.Millisecond))
	s := newStore(t, c, distributed.WithClientClock(clk))
	fw := algo.FixedWindow{Limit: 10, Window: time.Second}
	for i := range 10 {
		if d, err := s.Apply(ctx, "k", fw, algo.Request{N: 1}); err != nil || !d.Allowed {
			t.Fatalf("grant %d: %+v, %v", i+1, d, err)
		}
	}
	time.Sleep(100 * time.Millisecond) // real time for Redis's expiry: at least twice the 50 ms left
	granted := 0
	for range 10 {
		d, err := s.Apply(ctx, "k", fw, algo.Request{N: 1})
		if err == nil && d.Allowed {
			granted++
		}
	}
	if granted > 0 {
		t.Fatalf("%d more granted in a window of 10 that had granted 10, at the same client instant", granted)
	}
}

// TestClientClockPadsTTL checks that every key a client-clock store writes, through every
// kind of call (each algorithm, a penalty, a composite, the semaphore), keeps its state
// for the tolerance beyond the state's own expiry: PTTL ≥ tolerance - the time taken.
func TestClientClockPadsTTL(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := ctxTimeout(t, 60*time.Second)
	const tol = 30 * time.Second
	prefix := freshPrefix()
	s := teststore.Redis(t, c, distributed.WithPrefix(prefix), distributed.WithTimeout(testTimeout),
		distributed.WithClientClock(fakeClock()), distributed.WithClockTolerance(tol))
	t.Cleanup(func() { _ = s.Close() })
	// check asserts the bounds on the PTTL of every key matching pattern, written since start.
	check := func(what, pattern string, start time.Time, reset time.Duration) {
		t.Helper()
		keys, err := c.Keys(ctx, pattern).Result()
		if err != nil || len(keys) == 0 {
			t.Fatalf("%s: KEYS %s = %v, %v", what, pattern, keys, err)
		}
		for _, k := range keys {
			pttl, err := c.PTTL(ctx, k).Result()
			if err != nil {
				t.Fatal(err)
			}
			lo, hi := tol-time.Since(start), reset+tol+time.Millisecond
			if pttl < lo || pttl > hi {
				t.Errorf("%s: PTTL %s = %v, want in [%v, %v]", what, k, pttl, lo, hi)
			}
		}
	}
	for i, a := range append(oneOfEach(), algo.Penalty{Rule: algo.FixedWindow{Limit: 1, Window: time.Second}, Block: time.Second}) {
		key := fmt.Sprint("k", i)
		for range 2 { // the penalty's key is written on its first denial
			start := time.Now()
			d, err := s.Apply(ctx, key, a, algo.Request{N: 1})
			if err != nil {
				t.Fatal(err)
			}
			check(a.Name(), prefix+"{"+key+"}*", start, d.ResetAfter)
		}
	}
	start := time.Now()
	rules := []algo.Algorithm{algo.TokenBucket{Rate: 1, Burst: 5}, algo.SlidingWindowLog{Limit: 5, Window: 2 * time.Second}}
	ds, _, err := s.ApplyAll(ctx, "all", rules, algo.Request{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	check("composite", prefix+"{all}*", start, max(ds[0].ResetAfter, ds[1].ResetAfter))
	start = time.Now()
	if r, err := s.Acquire(ctx, "sem", algo.Semaphore{Permits: 2, LeaseTTL: 3 * time.Second}, "tok", 0); err != nil || !r.Acquired {
		t.Fatalf("Acquire = %+v, %v", r, err)
	}
	check("semaphore", prefix+"{sem}*", start, 3*time.Second)
}

// seqClock returns real times from ts in turn, then the last one for ever: each read is
// one step of a test, with no sleeping.
func seqClock(ts ...time.Time) func() time.Time {
	var mu sync.Mutex
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t := ts[0]
		if len(ts) > 1 {
			ts = ts[1:]
		}
		return t
	}
}

// TestClientClockLagRefused moves real time with a test clock: a client clock that falls
// more than the tolerance behind real time, compared with calls older than the
// tolerance, makes calls fail with ErrInvalidConfig instead of deciding, and decides again
// once it has caught up; a clock stepped back is refused only once the keys written
// before the step may have expired.
func TestClientClockLagRefused(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := ctxTimeout(t, 60*time.Second)
	const tol = 10 * time.Second
	fw := algo.FixedWindow{Limit: 10, Window: time.Minute}
	real := clockx.NewFake(epoch)
	clk := fakeClock()
	s := newStore(t, c, distributed.WithClientClock(clk), distributed.WithClockTolerance(tol),
		distributed.WithRealClock(real.Now))
	apply := func(step string, wantErr bool) {
		t.Helper()
		d, err := s.Apply(ctx, "k", fw, algo.Request{N: 1})
		switch {
		case wantErr && (!errors.Is(err, algo.ErrInvalidConfig) || !strings.Contains(fmt.Sprint(err), "WithClientClock")):
			t.Fatalf("%s: Apply = %+v, %v; want an error wrapping ErrInvalidConfig naming WithClientClock", step, d, err)
		case !wantErr && err != nil:
			t.Fatalf("%s: Apply: %v", step, err)
		}
	}
	apply("start", false)
	clk.Set(epoch.Add(-time.Hour)) // stepped back: the keys written are younger than tol
	apply("stepped back, young keys", false)
	clk.Set(epoch)
	real.Add(tol - time.Second) // the first call's keys may not have expired yet
	apply("9 s behind", false)
	real.Add(2 * time.Second)
	apply("11 s behind", true)
	for _, op := range []func() error{
		func() error { return s.Refund(ctx, "k", fw, 1, epoch.UnixMicro()) },
		func() error { _, err := s.Peek(ctx, "k", fw, algo.Request{N: 1}); return err },
		func() error {
			_, _, err := s.ApplyAll(ctx, "k", []algo.Algorithm{fw, algo.TokenBucket{Rate: 1, Burst: 1}}, algo.Request{N: 1})
			return err
		},
		func() error {
			_, err := s.Acquire(ctx, "sem", algo.Semaphore{Permits: 1, LeaseTTL: time.Second}, "t", 0)
			return err
		},
	} {
		if err := op(); !errors.Is(err, algo.ErrInvalidConfig) {
			t.Errorf("11 s behind: %v, want an error wrapping ErrInvalidConfig", err)
		}
	}
	clk.Add(5 * time.Second) // caught up to 6 s behind
	apply("6 s behind", false)

	// A call whose reply comes back past the tolerance: the real clock reads t0 when the
	// store is made, t0 for the first call, t0+5s when the second starts and t0+11s when
	// it is back, by when the first call is old enough for its keys to have expired.
	t0 := epoch
	s2 := newStore(t, c, distributed.WithClientClock(fakeClock()), distributed.WithClockTolerance(tol),
		distributed.WithRealClock(seqClock(t0, t0, t0, t0.Add(5*time.Second), t0.Add(11*time.Second))))
	if d, err := s2.Apply(ctx, "k", fw, algo.Request{N: 1}); err != nil || !d.Allowed {
		t.Fatalf("first call: %+v, %v", d, err)
	}
	if d, err := s2.Apply(ctx, "k", fw, algo.Request{N: 1}); !errors.Is(err, algo.ErrInvalidConfig) {
		t.Fatalf("call back 11 s behind: %+v, %v; want an error wrapping ErrInvalidConfig", d, err)
	}
}
