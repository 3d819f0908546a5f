package limiter_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// newLocal returns a local store on clk (real time when nil), closed when tb ends.
func newLocal(tb testing.TB, clk clockx.Clock) *local.Store {
	tb.Helper()
	opts := []local.Option{local.WithSweepInterval(0)}
	if clk != nil {
		opts = append(opts, local.WithClock(clk))
	}
	st := teststore.Local(tb, opts...)
	tb.Cleanup(func() { _ = st.Close() })
	return st
}

func mustNew(tb testing.TB, st store.Store, a algo.Algorithm, opts ...limiter.Option) *limiter.Limiter {
	tb.Helper()
	l, err := limiter.New(st, a, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

func mustAll(tb testing.TB, rules ...*limiter.Limiter) *limiter.Limiter {
	tb.Helper()
	l, err := limiter.All(rules...)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// splitKey is the key function of the "per user AND per item" tests: keys are
// "user|item".
func userPart(k string) string { u, _, _ := strings.Cut(k, "|"); return "user:" + u }
func itemPart(k string) string { _, i, _ := strings.Cut(k, "|"); return "item:" + i }

func TestAllConfig(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(start)
	st, other := newLocal(t, clk), newLocal(t, clk)
	tb := algo.TokenBucket{Rate: 10, Burst: 10}
	a := mustNew(t, st, tb)
	b := mustNew(t, st, algo.TokenBucket{Rate: 1, Burst: 3})
	for _, tc := range []struct {
		name  string
		rules []*limiter.Limiter
		want  string // "" for no error, else a part of the error
	}{
		{"none", nil, "no rules"},
		{"nil", []*limiter.Limiter{a, nil}, "rule 2 is nil"},
		{"zero Limiter", []*limiter.Limiter{a, {}}, "not a Limiter made by New"},
		{"same slot", []*limiter.Limiter{a, b}, ""},
		{"same limiter twice", []*limiter.Limiter{a, a}, ""},
		{"named", []*limiter.Limiter{a, mustNew(t, st, algo.Named(algo.TokenBucket{Rate: 1, Burst: 3}, "slow"))}, ""},
		{"other store", []*limiter.Limiter{a, mustNew(t, other, tb)}, ""},
		{"key function", []*limiter.Limiter{a, mustNew(t, st, tb, limiter.WithKeyFunc(itemPart))}, ""},
		{"nested same slot", []*limiter.Limiter{mustAll(t, a, mustNew(t, other, tb)), b}, ""},
	} {
		_, err := limiter.All(tc.rules...)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (!errors.Is(err, algo.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err = %v, want algo.ErrInvalidConfig mentioning %q", tc.name, err, tc.want)
		}
	}

	c := mustAll(t, a, mustAll(t, mustNew(t, other, tb), mustNew(t, st, algo.GCRA{Rate: 1, Burst: 1})))
	if got := len(c.Rules()); got != 3 {
		t.Errorf("a nested composite flattens to %d rules, want 3", got)
	}
	if a.Rules() != nil {
		t.Error("Rules() of a single limiter is not nil")
	}
	if c.Algorithm() != nil {
		t.Errorf("Algorithm() of a composite = %v, want nil", c.Algorithm())
	}
	if err := c.SetAlgorithm(tb); !errors.Is(err, algo.ErrInvalidConfig) {
		t.Errorf("SetAlgorithm on a composite: %v, want algo.ErrInvalidConfig", err)
	}
	ctx := context.Background()
	if _, err := c.AllowN(ctx, "k", 0); !errors.Is(err, algo.ErrInvalidRequest) {
		t.Errorf("AllowN(0): %v", err)
	}
	if _, err := c.Allow(ctx, ""); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("Allow(\"\"): %v", err)
	}
	if r, err := c.Reserve(ctx, "", 1, time.Second); r != nil || !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("Reserve(\"\"): %v %v", r, err)
	}
	if err := c.Wait(ctx, ""); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("Wait(\"\"): %v", err)
	}
	// Key functions that map to one key keep the rules apart (composite_namespace_test.go).
	g := mustNew(t, st, algo.Named(tb, "global"), limiter.WithKeyFunc(func(string) string { return "all" }))
	h := mustNew(t, st, algo.Named(tb, "global"), limiter.WithKeyFunc(func(string) string { return "all" }))
	if _, err := mustAll(t, g, h).Allow(ctx, "k"); err != nil {
		t.Errorf("rules mapping to one key and slot: %v", err)
	}
}

// windowCount counts grants per window of one rule.
type windowCount struct {
	window time.Duration
	limit  int64
	n      map[int64]int64
}

func (w *windowCount) add(t time.Time, n int64) { w.n[t.UnixMicro()/w.window.Microseconds()] += n }

func (w *windowCount) check(tb testing.TB, seed uint64) {
	tb.Helper()
	for i, n := range w.n {
		if n > w.limit {
			tb.Fatalf("seed %d: window %d of %v holds %d grants, limit %d", seed, i, w.window, n, w.limit)
		}
	}
}

// TestAllWindowsNeverExceed drives "10 per second AND 3 per 100 ms" over random timelines,
// on one store (atomic) and on two stores (refund), and counts the grants per window.
func TestAllWindowsNeverExceed(t *testing.T) {
	t.Parallel()
	long := algo.FixedWindow{Limit: 10, Window: time.Second}
	short := algo.FixedWindow{Limit: 3, Window: 100 * time.Millisecond}
	for _, mode := range []string{"one store", "two stores"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			for seed := uint64(1); seed <= 5; seed++ {
				clk := clockx.NewFake(start)
				st1 := newLocal(t, clk)
				st2 := st1
				if mode == "two stores" {
					st2 = newLocal(t, clk)
				}
				all := mustAll(t, mustNew(t, st1, long, limiter.WithClock(clk)), mustNew(t, st2, short, limiter.WithClock(clk)))
				counts := []*windowCount{{long.Window, long.Limit, map[int64]int64{}}, {short.Window, short.Limit, map[int64]int64{}}}
				rng := rand.New(rand.NewPCG(seed, 0))
				granted, denied := int64(0), 0
				for i := 0; i < 3000; i++ {
					clk.Add(time.Duration(rng.IntN(40_000)) * time.Microsecond)
					n := int64(1 + rng.IntN(2))
					d := allowN(t, all, "k", n)
					if !d.Allowed {
						denied++
						continue
					}
					granted += n
					for _, c := range counts {
						c.add(clk.Now(), n)
					}
				}
				for _, c := range counts {
					c.check(t, seed)
				}
				if granted < 400 || denied < 500 {
					t.Errorf("seed %d: %d permits granted, %d calls denied; the timeline tests little", seed, granted, denied)
				}
			}
		})
	}
}

// TestAllDenialLeavesEveryRuleUntouched gives a probed key and a control key the same
// granted history, the probed key also every denied call; afterwards each rule, asked on
// its own, answers both keys alike. One store (atomic) and two stores (refund), with rules
// whose refunds are exact.
func TestAllDenialLeavesEveryRuleUntouched(t *testing.T) {
	t.Parallel()
	rules := []algo.Algorithm{
		algo.SlidingWindowLog{Limit: 8, Window: time.Second},
		algo.FixedWindow{Limit: 3, Window: 100 * time.Millisecond},
		algo.Named(algo.SlidingWindowLog{Limit: 5, Window: 300 * time.Millisecond}, "mid"),
	}
	for _, mode := range []string{"one store", "three stores"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			const seed = 3
			clk := clockx.NewFake(start)
			st := newLocal(t, clk)
			var ls []*limiter.Limiter
			for _, a := range rules {
				if mode == "three stores" {
					st = newLocal(t, clk)
				}
				ls = append(ls, mustNew(t, st, a, limiter.WithClock(clk)))
			}
			all := mustAll(t, ls...)
			rng := rand.New(rand.NewPCG(seed, 0))
			denials := 0
			for i := 0; i < 2000; i++ {
				clk.Add(time.Duration(rng.IntN(30_000)) * time.Microsecond)
				n := int64(1 + rng.IntN(2))
				if d := allowN(t, all, "probed", n); !d.Allowed {
					denials++
					continue
				}
				if d := allowN(t, all, "control", n); !d.Allowed {
					t.Fatalf("seed %d step %d: control denied %+v what the probed key was granted", seed, i, d)
				}
			}
			if denials < 300 {
				t.Errorf("seed %d: %d denials", seed, denials)
			}
			for i := 0; i < 100; i++ {
				clk.Add(time.Duration(rng.IntN(20_000)) * time.Microsecond)
				for j, l := range ls {
					if a, b := allowN(t, l, "probed", 1), allowN(t, l, "control", 1); a != b {
						t.Fatalf("seed %d future %d rule %d: probed %+v, control %+v", seed, i, j+1, a, b)
					}
				}
			}
		})
	}
}

// TestAllDecision checks the composite Decision's fields against its rules'.
func TestAllDecision(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(start)
	st := newLocal(t, clk)
	fast := mustNew(t, st, algo.TokenBucket{Rate: 10, Burst: 5})                    // refills 1 per 100ms
	slow := mustNew(t, st, algo.Named(algo.TokenBucket{Rate: 1, Burst: 8}, "slow")) // 1 per s
	window := mustNew(t, st, algo.FixedWindow{Limit: 6, Window: time.Minute})
	all := mustAll(t, fast, slow, window)

	d := allowN(t, all, "k", 1)
	// Remaining: fast 4, slow 7, window 5 → fast's. ResetAfter: the window's, until the
	// minute ends, is the largest.
	if !d.Allowed || d.Limit != 5 || d.Remaining != 4 || d.ResetAfter != time.Minute {
		t.Errorf("first grant: %+v, want Limit 5, Remaining 4 (the fast bucket), ResetAfter 1m (the window)", d)
	}
	allowN(t, all, "k", 4) // fast 0, slow 3, window 1
	d = allowN(t, all, "k", 2)
	// fast denies (RetryAfter 200ms), slow grants, window denies (until the minute ends).
	if d.Allowed || d.RetryAfter != time.Minute || d.Limit != 5 || d.Remaining != 0 {
		t.Errorf("denial: %+v, want RetryAfter 1m (the largest), Limit 5 Remaining 0 (the smallest denier)", d)
	}
	if got := allowN(t, slow, "k", 1); got.Remaining != 2 {
		t.Errorf("slow bucket after the denial: %+v, want Remaining 2 (nothing taken by the denial)", got)
	}
	d = allowN(t, all, "k", 9) // more than fast and slow can ever grant
	if d.Allowed || d.RetryAfter != algo.Never {
		t.Errorf("n=9: %+v, want RetryAfter Never", d)
	}
	if err := all.WaitN(context.Background(), "k", 9); !errors.Is(err, limiter.ErrExceedsLimit) {
		t.Errorf("WaitN(9): %v, want ErrExceedsLimit", err)
	}

	// On separate stores the rules are asked in order and the first denial ends the
	// request: the window, last, is not asked when a bucket denies.
	other := newLocal(t, clk)
	w2 := mustNew(t, other, algo.FixedWindow{Limit: 6, Window: time.Minute})
	all2 := mustAll(t, mustNew(t, other, algo.TokenBucket{Rate: 10, Burst: 1}), w2)
	allowN(t, all2, "j", 1)
	if d := allowN(t, all2, "j", 1); d.Allowed || d.RetryAfter != 100*time.Millisecond || d.Limit != 1 {
		t.Errorf("second request: %+v, want the bucket's denial alone", d)
	}
}

// TestAllRefundPerUserAndItem: a per-user rule and a per-item rule on one store, with key
// functions. When the item is sold out, the user's permit is refunded; the rule after the
// denying one is not asked.
func TestAllRefundPerUserAndItem(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(start)
	st := newLocal(t, clk)
	perUser := mustNew(t, st, algo.FixedWindow{Limit: 5, Window: time.Minute}, limiter.WithKeyFunc(userPart))
	perItem := mustNew(t, st, algo.FixedWindow{Limit: 2, Window: time.Minute}, limiter.WithKeyFunc(itemPart))
	global := mustNew(t, st, algo.Named(algo.FixedWindow{Limit: 100, Window: time.Minute}, "global"),
		limiter.WithKeyFunc(func(string) string { return "global" }))
	all := mustAll(t, perUser, perItem, global)
	for _, k := range []string{"ann|book", "bob|book"} {
		if d := allowN(t, all, k, 1); !d.Allowed {
			t.Fatalf("%s: %+v", k, d)
		}
	}
	d := allowN(t, all, "ann|book", 1)
	if d.Allowed || d.Limit != 2 {
		t.Fatalf("third book: %+v, want the item rule to deny", d)
	}
	if got := allowN(t, perUser, "ann|", 1).Remaining; got != 3 {
		t.Errorf("ann's window after the denial: %d left, want 3 (her permit refunded)", got)
	}
	if got := allowN(t, global, "x", 1).Remaining; got != 97 {
		t.Errorf("global window: %d left, want 97 (not asked for the denied request)", got)
	}
	if d := allowN(t, all, "ann|pen", 1); !d.Allowed {
		t.Errorf("another item: %+v", d)
	}
}
