package local

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
)

// TestFloodNeverResetsALimitedKey is issue 11's scenario: a key drained for the hour must
// stay drained while a flood of new keys passes through a bounded store. Every held
// fixed-window key is as far from fresh as any other, so an eviction that picks the key
// "closest to fresh" picked the drained one and handed it a new quota.
func TestFloodNeverResetsALimitedKey(t *testing.T) {
	t.Parallel()
	const maxKeys = 1000
	s, clk := newTestStore(t, WithMaxKeys(maxKeys), WithShards(4))
	ctx := context.Background()
	fw := algo.FixedWindow{Limit: 5, Window: time.Hour}
	apply := func(key string) algo.Decision {
		t.Helper()
		d, err := s.Apply(ctx, key, fw, algo.Request{N: 1})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for i := 0; i < 5; i++ {
		if !apply("victim").Allowed {
			t.Fatalf("request %d of a fresh key denied", i)
		}
	}
	granted := 0
	for i := 0; i < 50_000; i++ {
		apply(fmt.Sprint("flood:", i))
		if i%10 == 0 && apply("victim").Allowed {
			granted++
		}
		clk.Add(50 * time.Millisecond) // 2,500 s in all: the hour's window never ends
	}
	if granted != 0 {
		t.Errorf("the drained key was granted %d more permits within its hour", granted)
	}
	if got := s.Len(); got > maxKeys {
		t.Errorf("Len() = %d, want ≤ %d", got, maxKeys)
	}
}

// TestEvictionNeverOverAdmits drives a small bounded store with random traffic (a few
// regular keys among floods of new ones, at random instants, some requests reserving with a
// MaxWait) for each algorithm and two composites (ApplyAll), and checks the safety
// invariant of eviction: the requests the bounded store granted to a key, replayed at the
// same instants on an unbounded store that never forgets, are all granted there too.
// So what one key was granted is always something a single remembered key could have been
// granted: no eviction, overflow or copy ever handed a key back permits it had used.
// It also checks that the store never holds more than its bound (overflow states aside).
//
// The replay sees only the granted requests, so it is the most permissive history the key
// can have; the invariant leans on a state that has granted more never being more permissive
// than one that granted less for the algorithms that share an overflow state (see
// overflowSafe); the smooth ones deny new keys instead.
func TestEvictionNeverOverAdmits(t *testing.T) {
	t.Parallel()
	algs := []algo.Algorithm{
		algo.FixedWindow{Limit: 3, Window: 10 * time.Second},
		algo.SlidingWindowLog{Limit: 3, Window: 10 * time.Second},
		algo.SlidingWindowCounter{Limit: 3, Window: 10 * time.Second},
		algo.TokenBucket{Rate: 0.5, Burst: 3},
		algo.LeakyBucket{Rate: 0.5, Capacity: 3},
		algo.GCRA{Rate: 0.5, Burst: 3},
		algo.SmoothBursty{Rate: 0.5, MaxBurstSeconds: 4},
		algo.SmoothWarmingUp{Rate: 1, Warmup: 4 * time.Second},
	}
	cases := map[string][]algo.Algorithm{
		// ApplyAll: rules that share an overflow state beside one that denies new keys.
		"all:window+bucket": {algs[0], algo.Named(algs[3], "b")},
		"all:gcra+smooth":   {algs[5], algs[6]},
	}
	for _, a := range algs {
		cases[a.Name()] = []algo.Algorithm{a}
	}
	for name, rules := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for seed := uint64(1); seed <= 20; seed++ {
				checkNeverOverAdmits(t, rules, seed)
			}
		})
	}
}

// checkNeverOverAdmits runs one random sequence of TestEvictionNeverOverAdmits: one rule
// through Apply, several through ApplyAll.
func checkNeverOverAdmits(t *testing.T, rules []algo.Algorithm, seed uint64) {
	t.Helper()
	const maxKeys, shards = 8, 2
	rng := rand.New(rand.NewPCG(seed, 11))
	clk := clockx.NewFake(start)
	bounded := mustNew(t, WithClock(clk), WithSweepInterval(0), WithMaxKeys(maxKeys), WithShards(shards))
	replay := mustNew(t, WithClock(clk), WithSweepInterval(0))
	defer bounded.Close()
	defer replay.Close()
	ctx := context.Background()
	apply := func(s *Store, key string, req algo.Request) (bool, error) {
		if len(rules) == 1 {
			d, err := s.Apply(ctx, key, rules[0], req)
			return d.Allowed, err
		}
		_, ok, err := s.ApplyAll(ctx, key, rules, req)
		return ok, err
	}
	flood, granted := 0, 0
	for op := 0; op < 3000; op++ {
		clk.Add(time.Duration(rng.IntN(400)) * time.Millisecond)
		var key string
		if rng.IntN(2) == 0 {
			key = fmt.Sprint("regular:", rng.IntN(12))
		} else {
			flood++
			key = fmt.Sprint("flood:", flood)
		}
		req := algo.Request{N: 1 + rng.Int64N(2)}
		if rng.IntN(4) == 0 { // a reservation: granted if available within MaxWait
			req.MaxWait = time.Duration(rng.IntN(3000)) * time.Millisecond
		}
		ok, err := apply(bounded, key, req)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			continue
		}
		granted++
		if ok, err := apply(replay, key, req); err != nil || !ok {
			t.Fatalf("seed %d op %d: %q granted %d at +%v, more than a remembered key could have been granted (replay: %v, %v)",
				seed, op, key, req.N, clk.Now().Sub(start), ok, err)
		}
		if got := bounded.Len(); got > maxKeys {
			t.Fatalf("seed %d op %d: Len() = %d, want ≤ %d", seed, op, got, maxKeys)
		}
	}
	// The sequence must have reached the full-store paths, and still granted.
	if bounded.Overflows() == 0 || granted < 100 {
		t.Fatalf("seed %d: %d overflows, %d grants: the test no longer exercises a full store", seed, bounded.Overflows(), granted)
	}
}

// TestMaxKeysOverflow: with room for one key, held by a drained key, new keys are decided by
// one shared overflow state, the drained key stays drained, and once the held key is idle a
// new key takes its place, starting from the overflow state while that is not fresh.
func TestMaxKeysOverflow(t *testing.T) {
	t.Parallel()
	s, clk := newTestStore(t, WithMaxKeys(1), WithShards(1))
	ctx := context.Background()
	tb := algo.TokenBucket{Rate: 1, Burst: 2}
	take := func(key string, n int64) bool {
		t.Helper()
		d, err := s.Apply(ctx, key, tb, algo.Request{N: n})
		if err != nil {
			t.Fatal(err)
		}
		return d.Allowed
	}
	take("a", 2) // a is empty: full again in 2 s
	clk.Add(time.Second)
	if !take("b", 1) || !take("c", 1) || take("d", 1) {
		t.Fatal("b, c, d: want the overflow bucket (2 tokens) to grant b and c, deny d")
	}
	if got := s.Overflows(); got != 3 {
		t.Errorf("Overflows() = %d, want 3", got)
	}
	if take("a", 2) || !take("a", 1) {
		t.Fatal("a was reset: want its 1 refilled token, not 2")
	}
	if got := s.Len(); got != 1 {
		t.Fatalf("Len() = %d, want 1", got)
	}
	clk.Add(2 * time.Second) // a is full again, so idle; the overflow bucket too
	// b takes a's place with a full bucket; a then finds b's place taken and is decided
	// by a new overflow bucket.
	if !take("b", 2) || !take("a", 1) {
		t.Fatal("after 2 s: want b to take idle a's place, and a a fresh overflow bucket")
	}
	if got := s.Overflows(); got != 4 { // a found b's place taken (b is not idle)
		t.Errorf("Overflows() = %d, want 4", got)
	}
}

// TestMaxKeysNewKeyStartsFromOverflow: a new key that finds room while the overflow state
// is still limiting starts as a copy of it: it may have been decided by it just before.
func TestMaxKeysNewKeyStartsFromOverflow(t *testing.T) {
	t.Parallel()
	s, clk := newTestStore(t, WithMaxKeys(1), WithShards(1))
	ctx := context.Background()
	fw := algo.FixedWindow{Limit: 3, Window: time.Minute}
	tb := algo.TokenBucket{Rate: 1000, Burst: 1}
	apply := func(key string, a algo.Algorithm) bool {
		t.Helper()
		d, err := s.Apply(ctx, key, a, algo.Request{N: 1})
		if err != nil {
			t.Fatal(err)
		}
		return d.Allowed
	}
	apply("holder", tb) // full again in 1 ms
	for i, want := range []bool{true, true, true, false} {
		if got := apply("k", fw); got != want { // k is decided by the overflow window
			t.Fatalf("request %d of k: Allowed = %v, want %v", i, got, want)
		}
	}
	clk.Add(time.Millisecond) // holder is idle: k now gets an entry of its own
	if apply("k", fw) {
		t.Fatal("k got a fresh window on finding room: it had used the overflow window's 3")
	}
	if got := s.Len(); got != 1 {
		t.Fatalf("Len() = %d, want 1 (k)", got)
	}
}

// TestMaxKeysDeniesSmooth: a smooth limiter's fresh state is its slowest, so a shared state
// could admit a new key sooner than its own would: with no room, new keys are denied, with
// a RetryAfter at which a held key becomes idle.
func TestMaxKeysDeniesSmooth(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t, WithMaxKeys(1), WithShards(1))
	ctx := context.Background()
	sb := algo.SmoothBursty{Rate: 1}
	first, err := s.Apply(ctx, "a", sb, algo.Request{N: 1})
	if err != nil || !first.Allowed {
		t.Fatalf("a: %+v, %v", first, err)
	}
	d, err := s.Apply(ctx, "b", sb, algo.Request{N: 1})
	if err != nil || d.Allowed || d.RetryAfter != first.ResetAfter || d.Limit != first.Limit {
		t.Fatalf("b: %+v, %v; want a denial retrying after a's ResetAfter %v, Limit %d",
			d, err, first.ResetAfter, first.Limit)
	}
	if got := s.Overflows(); got != 1 {
		t.Errorf("Overflows() = %d, want 1", got)
	}
	ds, ok, err := s.ApplyAll(ctx, "b", []algo.Algorithm{algo.GCRA{Rate: 1, Burst: 1}, sb}, algo.Request{N: 1})
	if err != nil || ok || !ds[0].Allowed || ds[1].Allowed || ds[1].RetryAfter <= 0 {
		t.Fatalf("ApplyAll: %v %+v %v; want the smooth rule denied for want of room", ok, ds, err)
	}
}

// TestMaxKeysApplyAllOpaque: a custom rule whose state cannot be copied finds no room (it
// is denied, as custom algorithms are) beside a rule decided by the overflow state: the call
// is denied and the overflow state's grant refunded.
func TestMaxKeysApplyAllOpaque(t *testing.T) {
	t.Parallel()
	s, _ := newTestStore(t, WithMaxKeys(1), WithShards(1))
	ctx := context.Background()
	fw := algo.FixedWindow{Limit: 1, Window: time.Minute}
	held, err := s.Apply(ctx, "holder", fw, algo.Request{N: 1})
	if err != nil || !held.Allowed {
		t.Fatalf("holder: %+v, %v", held, err)
	}
	tb := algo.TokenBucket{Rate: 1e-3, Burst: 1}
	ds, ok, err := s.ApplyAll(ctx, "k", []algo.Algorithm{tb, opaque{Limit: 10}}, algo.Request{N: 1})
	if err != nil || ok || !ds[0].Allowed || ds[1].Allowed || ds[1].RetryAfter != held.ResetAfter {
		t.Fatalf("ApplyAll: %v %+v %v; want the opaque rule denied until the holder is idle (%v)",
			ok, ds, err, held.ResetAfter)
	}
	// The overflow bucket's token was refunded: another new key gets it.
	if d, err := s.Apply(ctx, "other", tb, algo.Request{N: 1}); err != nil || !d.Allowed {
		t.Fatalf("other: %+v, %v; want the overflow bucket's token back", d, err)
	}
	if got := s.Len(); got != 1 {
		t.Errorf("Len() = %d, want 1", got)
	}
}
