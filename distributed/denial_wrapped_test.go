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
