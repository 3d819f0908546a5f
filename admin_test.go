package limiter_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// adminStores makes the stores of this file's tests on clk, closed when t ends: local,
// and Redis on c when c is not nil (one place to change if the constructors do).
func adminStores(t *testing.T, clk *clockx.Fake, c redis.UniversalClient) map[string]store.Store {
	t.Helper()
	ls := teststore.Local(t, local.WithClock(clk), local.WithSweepInterval(0))
	t.Cleanup(func() { _ = ls.Close() })
	out := map[string]store.Store{"local": ls}
	if c != nil {
		rs := teststore.Redis(t, c, distributed.WithClientClock(clk), distributed.WithTimeout(10*time.Second),
			distributed.WithPrefix(fmt.Sprintf("admin-%d:", adminPrefix.Add(1))))
		t.Cleanup(func() { _ = rs.Close() })
		out["redis"] = rs
	}
	return out
}

var adminPrefix atomic.Int64

// adminAlgorithms are the rules the model drives: every algorithm, the smooth ones too.
var adminAlgorithms = []algo.Algorithm{
	algo.FixedWindow{Limit: 3, Window: 100 * time.Millisecond},
	algo.SlidingWindowLog{Limit: 3, Window: 100 * time.Millisecond},
	algo.SlidingWindowCounter{Limit: 4, Window: 100 * time.Millisecond},
	algo.TokenBucket{Rate: 20, Burst: 3},
	algo.LeakyBucket{Rate: 30, Capacity: 3},
	algo.GCRA{Rate: 1e3 / 7, Burst: 4},
	algo.SmoothBursty{Rate: 20, MaxBurstSeconds: 0.2},
	algo.SmoothWarmingUp{Rate: 30, Warmup: 200 * time.Millisecond},
}

// TestPeekResetModel plays a random sequence of Allow, Peek, Reset and clock moves on one
// key of a limiter (every algorithm, composites, on the local store and on Redis) and
// checks the contract at each step: a Peek equals the Allow that follows it, and after a
// Reset the key answers exactly as a key never used (a twin key, renamed at each Reset,
// gets the same Allows without the peeks).
func TestPeekResetModel(t *testing.T) {
	t.Parallel()
	c := redistest.WithoutExpiry(redistest.Start(t).Client(t)) // fake clocks against real TTLs
	type build func(st store.Store) (*limiter.Limiter, error)
	cases := map[string]build{}
	for _, a := range adminAlgorithms {
		cases[a.Name()] = func(st store.Store) (*limiter.Limiter, error) { return limiter.New(st, a) }
	}
	// Two rules on one store and key: one atomic step (store.MultiApplier).
	cases["all-atomic"] = func(st store.Store) (*limiter.Limiter, error) {
		a, _ := limiter.New(st, algo.TokenBucket{Rate: 20, Burst: 4})
		b, _ := limiter.New(st, algo.SlidingWindowLog{Limit: 3, Window: 100 * time.Millisecond})
		return limiter.All(a, b)
	}
	// Two rules on derived keys: one after the other, stopping at a denial.
	cases["all-keys"] = func(st store.Store) (*limiter.Limiter, error) {
		a, _ := limiter.New(st, algo.GCRA{Rate: 25, Burst: 3}, limiter.WithKeyFunc(func(k string) string { return "user:" + k }))
		b, _ := limiter.New(st, algo.FixedWindow{Limit: 4, Window: 100 * time.Millisecond},
			limiter.WithKeyFunc(func(k string) string { return "ip:" + k }))
		return limiter.All(a, b)
	}
	// Shadow mode: Allow lets a denied request through with the real figures, and a
	// composite counts a shadow rule as granting; Peek answers alike.
	cases["shadow"] = func(st store.Store) (*limiter.Limiter, error) {
		return limiter.New(st, algo.TokenBucket{Rate: 20, Burst: 3}, limiter.WithShadow())
	}
	cases["all-keys-shadow-first"] = func(st store.Store) (*limiter.Limiter, error) {
		a, _ := limiter.New(st, algo.SlidingWindowLog{Limit: 2, Window: 100 * time.Millisecond}, limiter.WithShadow(),
			limiter.WithKeyFunc(func(k string) string { return "user:" + k }))
		b, _ := limiter.New(st, algo.GCRA{Rate: 30, Burst: 4}, limiter.WithKeyFunc(func(k string) string { return "ip:" + k }))
		return limiter.All(a, b)
	}
	cases["all-shadow-group"] = func(st store.Store) (*limiter.Limiter, error) {
		a, _ := limiter.New(st, algo.FixedWindow{Limit: 2, Window: 100 * time.Millisecond}, limiter.WithShadow())
		b, _ := limiter.New(st, algo.TokenBucket{Rate: 30, Burst: 4})
		return limiter.All(a, b)
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			for sname, st := range adminStores(t, clk, c) {
				l, err := mk(st)
				if err != nil {
					t.Fatal(err)
				}
				runPeekResetModel(t, sname, l, clk, 300)
			}
		})
	}
}

func runPeekResetModel(t *testing.T, sname string, l *limiter.Limiter, clk *clockx.Fake, steps int) {
	t.Helper()
	ctx := context.Background()
	r := rand.New(rand.NewSource(14))
	used, resets := "used", 0
	twin := func() string { return fmt.Sprintf("twin-%d", resets) }
	var peeks, allowed, denied int
	for i := 0; i < steps; i++ {
		switch x := r.Intn(10); {
		case x < 3:
			clk.Add(time.Duration(r.Int63n(int64(60 * time.Millisecond))))
		case x == 3 && r.Intn(3) == 0:
			if err := l.Reset(ctx, used); err != nil {
				t.Fatalf("%s step %d: Reset: %v", sname, i, err)
			}
			resets++
		}
		var p limiter.Decision
		peeked := r.Intn(2) == 0
		if peeked {
			var err error
			if p, err = l.Peek(ctx, used); err != nil {
				t.Fatalf("%s step %d: Peek: %v", sname, i, err)
			}
			peeks++
		}
		du, err := l.Allow(ctx, used)
		if err != nil {
			t.Fatal(err)
		}
		dt, err := l.Allow(ctx, twin())
		if err != nil {
			t.Fatal(err)
		}
		if du != dt {
			t.Fatalf("%s step %d: the used key (reset %d times, peeked) answers %+v, a key without peeks %+v", sname, i, resets, du, dt)
		}
		if peeked && !peekMatches(p, du) {
			t.Fatalf("%s step %d: Peek %+v, then Allow %+v", sname, i, p, du)
		}
		if du.Allowed && du.RetryAfter == 0 {
			allowed++
		} else {
			denied++ // or let through by shadow mode, which keeps the denial's RetryAfter
		}
	}
	if allowed == 0 || denied == 0 || resets == 0 || peeks == 0 {
		t.Fatalf("%s: the sequence did not exercise enough: %d allowed, %d denied, %d resets, %d peeks",
			sname, allowed, denied, resets, peeks)
	}
}

// peekMatches reports whether the Peek p agrees with d, the Allow right after it: the same
// answer, except that p's Remaining is what was there before d took its permit (no less
// than what d leaves; the same when d is a denial, which takes nothing).
func peekMatches(p, d limiter.Decision) bool {
	if d.Allowed && p.Remaining < d.Remaining || !d.Allowed && p.Remaining != d.Remaining {
		return false
	}
	p.Remaining = d.Remaining
	return p == d
}

// TestPeekFreshKey checks that a Peek on a key never used answers what a first Allow
// answers, with what the key has before it as Remaining, and leaves the local store
// without an entry.
func TestPeekFreshKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st := adminStores(t, clk, nil)["local"].(*local.Store)
	for _, a := range adminAlgorithms {
		l, err := limiter.New(st, a)
		if err != nil {
			t.Fatal(err)
		}
		p, err := l.Peek(ctx, "new-"+a.Name())
		if err != nil {
			t.Fatal(err)
		}
		if n := st.Len(); n != 0 {
			t.Fatalf("%v: Peek of a new key created %d entries", a, n)
		}
		d, err := l.Allow(ctx, "other-"+a.Name())
		if err != nil {
			t.Fatal(err)
		}
		if !peekMatches(p, d) {
			t.Errorf("%v: Peek of a new key %+v, first Allow of another %+v", a, p, d)
		}
		// What a new key has now (issue 24): all of it, except for a SmoothBursty,
		// which starts with no stored permits (and grants its first request anyway).
		if want := p.Limit; p.Remaining != want && a.Name() != "smooth-bursty" || a.Name() == "smooth-bursty" && p.Remaining != 0 {
			t.Errorf("%v: Peek of a new key %+v, want Remaining %d", a, p, want)
		}
		if err := l.Reset(ctx, "other-"+a.Name()); err != nil {
			t.Fatal(err)
		}
		if n := st.Len(); n != 0 {
			t.Fatalf("%v: Reset left %d entries", a, n)
		}
	}
}

// plainStore is a store.Store without store.Admin.
type plainStore struct{ store.Store }

// TestPeekResetUnsupported checks the error of Peek and Reset on a store without
// store.Admin, and on a composite one of whose rules has one.
func TestPeekResetUnsupported(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ls := adminStores(t, clk, nil)["local"]
	plain, err := limiter.New(plainStore{ls}, algo.TokenBucket{Rate: 1, Burst: 2})
	if err != nil {
		t.Fatal(err)
	}
	admin, err := limiter.New(ls, algo.GCRA{Rate: 1, Burst: 2})
	if err != nil {
		t.Fatal(err)
	}
	all, err := limiter.All(admin, plain)
	if err != nil {
		t.Fatal(err)
	}
	for name, l := range map[string]*limiter.Limiter{"one rule": plain, "composite": all} {
		_, err := l.Peek(ctx, "k")
		for _, want := range []error{store.ErrUnsupported, store.ErrUnsupported, errors.ErrUnsupported} {
			if !errors.Is(err, want) {
				t.Errorf("%s: Peek: %v, want it to wrap %v", name, err, want)
			}
		}
		if err := l.Reset(ctx, "k"); !errors.Is(err, store.ErrUnsupported) {
			t.Errorf("%s: Reset: %v, want store.ErrUnsupported", name, err)
		}
	}
	// The composite's other rule is reset all the same.
	if _, err := admin.Allow(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	_ = all.Reset(ctx, "k")
	if d, _ := admin.Peek(ctx, "k"); d.Remaining != 2 {
		t.Errorf("after the composite's Reset, its rule with store.Admin: %+v, want a fresh key (Remaining 2)", d)
	}
	var zero limiter.Limiter
	if _, err := zero.Peek(ctx, "k"); !errors.Is(err, algo.ErrInvalidConfig) {
		t.Errorf("Peek on a zero Limiter: %v", err)
	}
	if err := zero.Reset(ctx, "k"); !errors.Is(err, algo.ErrInvalidConfig) {
		t.Errorf("Reset on a zero Limiter: %v", err)
	}
	if _, err := admin.Peek(ctx, ""); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("Peek of an empty key: %v", err)
	}
}

// TestPeekCompositeShadowGroup: a group of rules on one store and key that holds a shadow
// rule is decided rule by rule, so Allow stops at the enforced rule's denial; Peek answers
// alike, without the shadow rule's longer RetryAfter.
func TestPeekCompositeShadowGroup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clockx.NewFake(start)
	st := newLocal(t, clk)
	enforced, err := limiter.New(st, algo.TokenBucket{Rate: 1, Burst: 1}, limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	shadow, err := limiter.New(st, algo.TokenBucket{Rate: 0.1, Burst: 1}, limiter.WithClock(clk), limiter.WithShadow())
	if err != nil {
		t.Fatal(err)
	}
	all, err := limiter.All(enforced, shadow)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := all.Allow(ctx, "k"); err != nil || !d.Allowed {
		t.Fatalf("first Allow = %+v, %v; want allowed", d, err)
	}
	p, err := all.Peek(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	d, err := all.Allow(ctx, "k")
	if err != nil || d.Allowed || d.RetryAfter != time.Second {
		t.Fatalf("second Allow = %+v, %v; want denied by the enforced rule, RetryAfter 1s", d, err)
	}
	if p.Allowed || p.RetryAfter != d.RetryAfter {
		t.Fatalf("Peek = %+v; want what Allow answered: denied, RetryAfter %v", p, d.RetryAfter)
	}
}
