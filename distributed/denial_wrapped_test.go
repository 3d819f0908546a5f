package distributed_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
)

// scriptedWrapper is a custom wrapper outside package algo: it decides as its inner
// algorithm, runs its script and says so with Unwrap.
type scriptedWrapper struct{ algo.Scripted }

func (w scriptedWrapper) Unwrap() algo.Algorithm { return w.Scripted }

// TestDenialCacheLooksThroughWrappers (issue 22): a rule wrapped in algo.Named or in a
// custom wrapper with Unwrap has its denials cached exactly as the rule itself: over one
// history on a fake client clock, the same answers and the same number of Redis commands
// (before, a wrapped rule's every denial went to Redis). A Penalty's denials write state:
// never cached, wrapped or not.
func TestDenialCacheLooksThroughWrappers(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 60*time.Second)
	run := func(a algo.Algorithm) (answers []algo.Decision, commands int64) {
		clk := fakeClock()
		calls := &countCalls{}
		cc := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
		cc.AddHook(calls)
		t.Cleanup(func() { _ = cc.Close() })
		s := teststore.Redis(t, cc, distributed.WithPrefix(freshPrefix()), distributed.WithClientClock(clk),
			distributed.WithTimeout(testTimeout), distributed.WithDenialCache(distributed.DenialCache{}))
		// The first call loads the script: outside the count.
		if _, err := s.Apply(ctx, "warm", a, algo.Request{N: 1}); err != nil {
			t.Fatal(err)
		}
		before := calls.n.Load()
		for i := 0; i < 200; i++ {
			clk.Add(3 * time.Millisecond)
			d, err := s.Apply(ctx, "k", a, algo.Request{N: 1})
			if err != nil {
				t.Fatal(err)
			}
			answers = append(answers, d)
		}
		return answers, calls.n.Load() - before
	}
	tb := algo.TokenBucket{Rate: 20, Burst: 5}
	want, wantCommands := run(tb)
	if wantCommands > 100 {
		t.Fatalf("%v: %d commands for 200 requests mostly denied: the cache did not answer", tb, wantCommands)
	}
	for _, a := range []algo.Algorithm{algo.Named(tb, "n"), scriptedWrapper{tb}, algo.Named(scriptedWrapper{tb}, "m")} {
		got, commands := run(a)
		if commands != wantCommands {
			t.Errorf("%v: %d Redis commands, want %d as for %v", a, commands, wantCommands, tb)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("%v: request %d answered %+v, want %+v as for %v", a, i, got[i], want[i], tb)
				break
			}
		}
	}
	pen := algo.Penalty{Rule: tb, Block: 20 * time.Millisecond}
	for _, a := range []algo.Algorithm{pen, algo.Named(pen, "p")} {
		if _, commands := run(a); commands < 200 {
			t.Errorf("%v: %d Redis commands for 200 requests, want one each: a Penalty's denials write", a, commands)
		}
	}
}

// TestDenialCacheTakesIncomparableAlgorithms (issue 35.5): an algorithm that == cannot
// compare (a wrapper holding a slice, or a comparable wrapper holding one) is accepted as
// the store without a cache accepts it: its denials are not cached, so every request goes
// to Redis and is answered as the plain store answers it, alone or concurrent (batched).
// Before, the second call on a key compared it with the cached config and panicked.
func TestDenialCacheTakesIncomparableAlgorithms(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 60*time.Second)
	tb := algo.TokenBucket{Rate: 20, Burst: 5}
	for _, a := range []algo.Algorithm{teststore.Tagged{Scripted: tb, Tags: []string{"x"}}, scriptedWrapper{teststore.Tagged{Scripted: tb}}} {
		clk := fakeClock()
		calls := &countCalls{}
		cc := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
		cc.AddHook(calls)
		t.Cleanup(func() { _ = cc.Close() })
		cached, err := distributed.New(cc, distributed.WithPrefix(freshPrefix()), distributed.WithClientClock(clk),
			distributed.WithTimeout(testTimeout), distributed.WithDenialCache(distributed.DenialCache{}))
		if err != nil {
			t.Fatal(err)
		}
		plain := teststore.Redis(t, srv.Client(t), distributed.WithPrefix(freshPrefix()), distributed.WithClientClock(clk),
			distributed.WithTimeout(testTimeout))
		if _, err := teststore.NoPanic(func() (algo.Decision, error) { return cached.Apply(ctx, "warm", a, algo.Request{N: 1}) }); err != nil {
			t.Fatal(err) // the first call loads the script: outside the count
		}
		before := calls.n.Load()
		for i := 0; i < 40; i++ {
			clk.Add(3 * time.Millisecond)
			got, err := teststore.NoPanic(func() (algo.Decision, error) { return cached.Apply(ctx, "k", a, algo.Request{N: 1}) })
			if err != nil {
				t.Fatalf("%v: request %d: %v", a, i, err)
			}
			want, err := plain.Apply(ctx, "k", a, algo.Request{N: 1})
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("%v: request %d answered %+v, want %+v as without the cache", a, i, got, want)
			}
		}
		if n := calls.n.Load() - before; n != 40 {
			t.Errorf("%v: %d Redis commands for 40 requests, want one each: not cached", a, n)
		}
		errs := make(chan error, 8)
		for range 8 {
			go func() {
				var err error
				for range 10 {
					if _, err = teststore.NoPanic(func() (algo.Decision, error) { return cached.Apply(ctx, "k", a, algo.Request{N: 1}) }); err != nil {
						break
					}
				}
				errs <- err
			}()
		}
		for range 8 {
			if err := <-errs; err != nil {
				t.Errorf("%v: concurrent requests: %v", a, err)
			}
		}
		if err := cached.Close(); err != nil {
			t.Errorf("%v: Close: %v", a, err)
		}
	}
}
