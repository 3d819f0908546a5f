package distributed_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/multirules"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// multiStep is one call of a random timeline.
type multiStep struct {
	advance time.Duration
	key     string
	req     algo.Request
}

// multiTimeline is a random sequence of calls on two keys: steps of 0 to 1.2 ms, N mostly 1
// or 2 and sometimes more than any limit, MaxWait mostly 0.
func multiTimeline(seed uint64, steps int) []multiStep {
	rng := rand.New(rand.NewPCG(seed, 1))
	waits := []time.Duration{0, 0, 0, 500 * time.Microsecond, 4 * time.Millisecond, algo.Forever}
	out := make([]multiStep, steps)
	for i := range out {
		n := int64(1 + rng.IntN(2))
		if rng.IntN(40) == 0 {
			n = 30
		}
		out[i] = multiStep{
			advance: time.Duration(rng.IntN(1200)) * time.Microsecond,
			key:     []string{"a", "b"}[rng.IntN(2)],
			req:     algo.Request{N: n, MaxWait: waits[rng.IntN(len(waits))]},
		}
	}
	return out
}

// TestApplyAllMatchesLocal runs every rule set over a random timeline on the Redis store
// and on the local store, each on its own fake clock, and requires identical answers: the
// composite script runs the very scripts whose equality with the Go transitions the
// differential suite checks, so any difference is the composite's doing.
func TestApplyAllMatchesLocal(t *testing.T) {
	t.Parallel()
	c := redistest.WithoutExpiry(redistest.Start(t).Client(t)) // fake clocks against real TTLs
	for name, rules := range multirules.Sets() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const seed = 20260106
			ctx := ctxTimeout(t, time.Minute)
			rclk, lclk := fakeClock(), fakeClock()
			rs := newStore(t, c, distributed.WithClientClock(rclk))
			ls := teststore.Local(t, local.WithClock(lclk), local.WithSweepInterval(0))
			t.Cleanup(func() { _ = ls.Close() })
			granted := 0
			for i, st := range multiTimeline(seed, 1500) {
				rclk.Add(st.advance)
				lclk.Add(st.advance)
				want, wantOK, err := ls.ApplyAll(ctx, st.key, rules, st.req)
				if err != nil {
					t.Fatal(err)
				}
				got, gotOK, err := rs.ApplyAll(ctx, st.key, rules, st.req)
				if err != nil {
					t.Fatalf("seed %d step %d: %v", seed, i, err)
				}
				if gotOK != wantOK || !reflect.DeepEqual(got, want) {
					t.Fatalf("seed %d step %d (%+v): Redis answered %v %+v, local %v %+v",
						seed, i, st, gotOK, got, wantOK, want)
				}
				if gotOK {
					granted++
				}
			}
			// A timeline where everything or nothing passes tests little.
			if granted < 100 || granted > 1400 {
				t.Errorf("%d of 1500 granted; the timeline does not exercise both outcomes", granted)
			}
		})
	}
}

// TestApplyAllOneRoundTrip checks that a composite is one FCALL (or one EVALSHA on a
// server without functions), whatever the number of rules, and that the composite script
// is loaded once (FUNCTION LOAD with the FCALL again after "Function not found", EVAL
// after NOSCRIPT).
func TestApplyAllOneRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		opts  []distributed.Option
		want  map[string]int
		stats []string
	}{
		{"functions", nil, map[string]int{"fcall": 20, "function+fcall": 1}, []string{"cmdstat_fcall:calls=21,"}},
		{"evalsha", []distributed.Option{distributed.WithEvalOnly()}, map[string]int{"evalsha": 20, "eval": 1},
			[]string{"cmdstat_evalsha:calls=20,", "cmdstat_eval:calls=1,"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := redistest.Start(t).Client(t)
			hook := &countTrips{countCmds{n: map[string]int{}}}
			c.AddHook(hook)
			ctx := ctxTimeout(t, 30*time.Second)
			s := newStore(t, c, append(tc.opts, distributed.WithClientClock(fakeClock()))...)
			rules := multirules.Sets()["mixed"]
			for i := 0; i < 20; i++ {
				if _, _, err := s.ApplyAll(ctx, "k", rules, algo.Request{N: 1}); err != nil {
					t.Fatal(err)
				}
			}
			if got := hook.take(); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("20 composite decisions of %d rules sent %v, want %v", len(rules), got, tc.want)
			}
			// The server counts the same: one script call per decision.
			info, err := c.Info(ctx, "commandstats").Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.stats {
				if !strings.Contains("\n"+info, "\n"+want) {
					t.Errorf("INFO commandstats lacks %q:\n%s", want, info)
				}
			}
		})
	}
}

// TestApplyAllErrors covers what only the Redis store can meet: a rule without a Lua twin,
// and a rule whose key holds another type (the error wraps store.ErrUnavailable and the
// other rules' grants are rolled back). The bad input every MultiApplier refuses, and
// ErrClosed after Close, are storetest's Multi/BadInput, which TestSingleNode and
// TestCluster run on this store.
func TestApplyAllErrors(t *testing.T) {
	t.Parallel()
	c := redistest.WithoutExpiry(redistest.Start(t).Client(t))
	ctx := ctxTimeout(t, 30*time.Second)
	prefix := freshPrefix()
	s := teststore.Redis(t, c, distributed.WithTimeout(testTimeout), distributed.WithPrefix(prefix), distributed.WithClientClock(fakeClock()))
	tb := algo.TokenBucket{Rate: 1, Burst: 5}
	fw := algo.FixedWindow{Limit: 5, Window: time.Second}
	if _, _, err := s.ApplyAll(ctx, "k", []algo.Algorithm{tb, plain{}}, algo.Request{N: 1}); !errors.Is(err, algo.ErrInvalidConfig) {
		t.Errorf("no Lua twin: err = %v, want %v", err, algo.ErrInvalidConfig)
	}

	// The FixedWindow's key holds a string that is not its state: WRONGTYPE inside the second rule.
	if _, _, err := s.ApplyAll(ctx, "w", []algo.Algorithm{tb, fw}, algo.Request{N: 1}); err != nil {
		t.Fatal(err)
	}
	before := dumpKeys(t, c, prefix)
	fwKey := prefix + "{w}:" + fw.Slot()
	if err := c.Set(ctx, fwKey, "not a hash", 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, _, err := s.ApplyAll(ctx, "w", []algo.Algorithm{tb, fw}, algo.Request{N: 1})
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), "WRONGTYPE") {
		t.Fatalf("WRONGTYPE in rule 2: err = %v, want ErrUnavailable naming WRONGTYPE", err)
	}
	after := dumpKeys(t, c, prefix)
	tbKey := prefix + "{w}:" + tb.Slot()
	if after[tbKey][0] != before[tbKey][0] {
		t.Errorf("rule 1's grant was kept although rule 2 failed")
	}

}

// TestApplyAllServerTime runs a composite on the server's clock: every rule sees the same
// instant (the grants' At agree), read once by the composite.
func TestApplyAllServerTime(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t).Client(t)
	ctx := ctxTimeout(t, 30*time.Second)
	s := newStore(t, c)
	rules := []algo.Algorithm{
		algo.TokenBucket{Rate: 10, Burst: 10},
		algo.GCRA{Rate: 10, Burst: 10},
		algo.SlidingWindowLog{Limit: 10, Window: time.Second},
	}
	before := time.Now().Truncate(time.Microsecond)
	ds, ok, err := s.ApplyAll(ctx, "k", rules, algo.Request{N: 1})
	after := time.Now()
	if err != nil || !ok {
		t.Fatalf("ApplyAll = %v %+v %v", ok, ds, err)
	}
	for i, d := range ds[1:] {
		if d.At != ds[0].At {
			t.Errorf("rule %d granted at %d, rule 1 at %d: the rules did not share one instant", i+2, d.At, ds[0].At)
		}
	}
	// Same machine, same clock: the server's time lies within the call, however long it took.
	if at := time.UnixMicro(ds[0].At); at.Before(before) || at.After(after) {
		t.Errorf("At = %v, want the server's time, within the call [%v, %v]", at, before, after)
	}
}

// TestApplyAllCluster runs composites on a Redis Cluster: one slot per user key, so no
// CROSSSLOT whatever the rules, and the same answers as the local store.
func TestApplyAllCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	c := redistest.WithoutExpiry(cl.Client(t))
	ctx := ctxTimeout(t, time.Minute)
	rules := multirules.Sets()["mixed"]
	rclk, lclk := fakeClock(), fakeClock()
	rs := newStore(t, c, distributed.WithClientClock(rclk))
	ls := teststore.Local(t, local.WithClock(lclk), local.WithSweepInterval(0))
	t.Cleanup(func() { _ = ls.Close() })
	for i, st := range multiTimeline(9, 300) {
		rclk.Add(st.advance)
		lclk.Add(st.advance)
		key := fmt.Sprintf("user-%d-%s", i%7, st.key) // many slots
		want, wantOK, err := ls.ApplyAll(ctx, key, rules, st.req)
		if err != nil {
			t.Fatal(err)
		}
		got, gotOK, err := rs.ApplyAll(ctx, key, rules, st.req)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if gotOK != wantOK || !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d: Redis %v %+v, local %v %+v", i, gotOK, got, wantOK, want)
		}
	}
}
