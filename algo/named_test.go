package algo_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

func everyAlgorithm() []algo.Algorithm {
	return []algo.Algorithm{
		algo.FixedWindow{Limit: 5, Window: 100 * time.Millisecond},
		algo.SlidingWindowLog{Limit: 5, Window: 100 * time.Millisecond},
		algo.SlidingWindowCounter{Limit: 5, Window: 100 * time.Millisecond},
		algo.TokenBucket{Rate: 30, Burst: 5},
		algo.LeakyBucket{Rate: 30, Capacity: 5},
		algo.GCRA{Rate: 30, Burst: 5},
		algo.SmoothBursty{Rate: 30, MaxBurstSeconds: 0.2},
		algo.SmoothWarmingUp{Rate: 30, Warmup: 100 * time.Millisecond},
	}
}

// TestNamedDecidesAsItsAlgorithm drives a named algorithm and its inner one side by side:
// same decisions, same name, same script; only the slot differs.
func TestNamedDecidesAsItsAlgorithm(t *testing.T) {
	t.Parallel()
	const seed = 5
	for _, a := range everyAlgorithm() {
		n := algo.Named(a, "burst")
		if err := n.Validate(); err != nil {
			t.Fatalf("%s: %v", a.Name(), err)
		}
		if got, want := n.Slot(), "burst:"+a.Slot(); got != want {
			t.Errorf("%s: Slot() = %q, want %q", a.Name(), got, want)
		}
		if got, want := n.Name(), a.Name(); got != want {
			t.Errorf("Name() = %q, want %q", got, want)
		}
		sn, ok := n.(algo.Scripted)
		if !ok || sn.Script() != a.(algo.Scripted).Script() {
			t.Errorf("%s: Named does not pass the Lua twin through", a.Name())
		}
		if got, want := fmt.Sprint(sn.AppendArgs(nil)), fmt.Sprint(a.(algo.Scripted).AppendArgs(nil)); got != want {
			t.Errorf("%s: AppendArgs = %s, want %s", a.Name(), got, want)
		}
		if u, ok := n.(interface{ Unwrap() algo.Algorithm }); !ok || u.Unwrap() != a {
			t.Errorf("%s: Unwrap does not return the inner algorithm", a.Name())
		}
		rng := rand.New(rand.NewPCG(seed, 0))
		sa, sb := a.NewState(), n.NewState()
		now := int64(1_767_225_600_000_000)
		for i := 0; i < 500; i++ {
			now += int64(rng.IntN(20_000))
			req := algo.Request{N: int64(1 + rng.IntN(3)), MaxWait: time.Duration(rng.IntN(3)) * 30 * time.Millisecond}
			da, db := a.Apply(sa, now, req), n.Apply(sb, now, req)
			if da != db {
				t.Fatalf("seed %d %s step %d: inner %+v, named %+v", seed, a.Name(), i, da, db)
			}
			if da.Allowed && rng.IntN(5) == 0 {
				a.Refund(sa, now, req.N, da.At)
				n.Refund(sb, now, req.N, db.At)
			}
		}
	}
}

func TestNamedWithoutScript(t *testing.T) {
	t.Parallel()
	n := algo.Named(noScript{algo.TokenBucket{Rate: 1, Burst: 1}}, "x")
	if _, ok := n.(algo.Scripted); ok {
		t.Error("Named claims a Lua twin its algorithm does not have")
	}
}

// noScript hides TokenBucket's Lua twin.
type noScript struct{ tb algo.TokenBucket }

func (a noScript) Name() string         { return "no-script" }
func (a noScript) Validate() error      { return a.tb.Validate() }
func (a noScript) Slot() string         { return "ns" }
func (a noScript) NewState() algo.State { return a.tb.NewState() }
func (a noScript) Apply(s algo.State, now int64, r algo.Request) algo.Decision {
	return a.tb.Apply(s, now, r)
}
func (a noScript) Refund(s algo.State, now, n, at int64) { a.tb.Refund(s, now, n, at) }

func TestNamedValidate(t *testing.T) {
	t.Parallel()
	tb := algo.TokenBucket{Rate: 1, Burst: 1}
	for _, tc := range []struct {
		a    algo.Algorithm
		name string
		ok   bool
	}{
		{tb, "per-second", true},
		{tb, "a.b_c-9", true},
		{algo.Named(tb, "inner"), "outer", true},
		{tb, strings.Repeat("x", 64), true},
		{tb, strings.Repeat("x", 65), false},
		{tb, "", false},
		{tb, "a:b", false},
		{tb, "a b", false},
		{tb, "{a}", false},
		{tb, "é", false},
		{tb, "\x00", false},
		{nil, "x", false},
		{algo.TokenBucket{}, "x", false},
	} {
		n := algo.Named(tc.a, tc.name)
		err := n.Validate()
		if (err == nil) != tc.ok || (err != nil && !errors.Is(err, algo.ErrInvalidConfig)) {
			t.Errorf("Named(%v, %q).Validate() = %v, want ok=%v", tc.a, tc.name, err, tc.ok)
		}
	}
	// Nothing panics on a nil algorithm, even when Validate is skipped.
	n := algo.Named(nil, "x")
	_ = n.Name()
	_ = n.Slot()
	if n.NewState() != nil {
		t.Error("NewState of a nil algorithm is not nil")
	}
	if d := n.Apply(nil, 0, algo.Request{N: 1}); d.Allowed {
		t.Error("a nil algorithm granted")
	}
	n.Refund(nil, 0, 1, 0)
}

// TestCloneStateIsDeep applies requests to clones of every algorithm's state: the original
// never changes, and a clone decides as the original would.
func TestCloneStateIsDeep(t *testing.T) {
	t.Parallel()
	const seed = 11
	for _, a := range everyAlgorithm() {
		rng := rand.New(rand.NewPCG(seed, 1))
		st := a.NewState()
		now := int64(1_000_000_000)
		for i := 0; i < 300; i++ {
			now += int64(rng.IntN(15_000))
			req := algo.Request{N: int64(1 + rng.IntN(2)), MaxWait: time.Duration(rng.IntN(2)) * 50 * time.Millisecond}
			c := clone(st)
			if c == nil {
				t.Fatalf("%s: CloneState returned nil", a.Name())
			}
			before := fmt.Sprintf("%+v", st)
			dc := a.Apply(c, now, req)
			if after := fmt.Sprintf("%+v", st); after != before {
				t.Fatalf("seed %d %s step %d: applying to the clone changed the original: %s → %s", seed, a.Name(), i, before, after)
			}
			if d := a.Apply(st, now, req); d != dc {
				t.Fatalf("seed %d %s step %d: clone decided %+v, original %+v", seed, a.Name(), i, dc, d)
			}
		}
	}
}

// Two token buckets on one key would share the slot "tb"; naming one gives it its own.
func ExampleNamed() {
	perSecond := algo.TokenBucket{Rate: 100, Burst: 100}
	per100ms := algo.Named(algo.TokenBucket{Rate: 200, Burst: 20}, "short")
	fmt.Println(perSecond.Slot(), per100ms.Slot())
	fmt.Println(per100ms.Name(), per100ms.Validate())
	// Output:
	// tb short:tb
	// token-bucket <nil>
}

// uncomparable is an Algorithm whose values cannot be compared with ==.
type uncomparable struct {
	noScript
	tags []string
}

// TestNamedComparesWithoutPanic: caches compare algorithms with ==; a named algorithm
// whose inner type is not comparable must not make that panic.
func TestNamedComparesWithoutPanic(t *testing.T) {
	t.Parallel()
	inner := uncomparable{noScript{algo.TokenBucket{Rate: 1, Burst: 1}}, []string{"x"}}
	a, b := algo.Named(inner, "a"), algo.Named(inner, "a")
	if a == b {
		t.Error("two calls of Named compare equal")
	}
	if c := a; c != a {
		t.Error("a named algorithm does not equal itself")
	}
}
