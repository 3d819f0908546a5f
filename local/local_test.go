package local

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/store"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// mustNew returns New(opts...), failing the test if New does.
func mustNew(tb testing.TB, opts ...Option) *Store {
	tb.Helper()
	s, err := New(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

func newTestStore(t *testing.T, opts ...Option) (*Store, *clockx.Fake) {
	t.Helper()
	clk := clockx.NewFake(start)
	s := mustNew(t, append([]Option{WithClock(clk), WithSweepInterval(0)}, opts...)...)
	t.Cleanup(func() { _ = s.Close() })
	return s, clk
}

func TestIdleKeysAreSwept(t *testing.T) {
	t.Parallel()
	s, clk := newTestStore(t)
	ctx := context.Background()
	tb := algo.TokenBucket{Rate: 10, Burst: 5}
	for i := 0; i < 1000; i++ {
		if _, err := s.Apply(ctx, fmt.Sprint("k", i), tb, algo.Request{N: 1}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := s.Len(), 1000; got != want {
		t.Fatalf("Len() = %d, want %d", got, want)
	}
	// One token refills in 100 ms: at 99 ms no key is fresh yet.
	clk.Add(99 * time.Millisecond)
	s.Sweep()
	if got, want := s.Len(), 1000; got != want {
		t.Fatalf("after 99ms Len() = %d, want %d (no bucket is full yet)", got, want)
	}
	clk.Add(time.Millisecond)
	s.Sweep()
	if got := s.Len(); got != 0 {
		t.Fatalf("after 100ms Len() = %d, want 0 (every bucket is full again)", got)
	}
}

func TestSweepKeepsBusyKeys(t *testing.T) {
	t.Parallel()
	s, clk := newTestStore(t)
	ctx := context.Background()
	fw := algo.FixedWindow{Limit: 3, Window: time.Second}
	// Align to a window start so the expiry instant is known.
	clk.Set(start.Truncate(time.Second))
	if _, err := s.Apply(ctx, "busy", fw, algo.Request{N: 1}); err != nil {
		t.Fatal(err)
	}
	clk.Add(999 * time.Millisecond)
	s.Sweep()
	if got := s.Len(); got != 1 {
		t.Fatalf("Len() = %d before the window ended, want 1", got)
	}
	// The state survives: two more fit, the fourth does not.
	for i, want := range []bool{true, true, false} {
		d, err := s.Apply(ctx, "busy", fw, algo.Request{N: 1})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed != want {
			t.Fatalf("request %d: Allowed = %v, want %v", i, d.Allowed, want)
		}
	}
}

func TestMaxKeysPrefersIdle(t *testing.T) {
	t.Parallel()
	s, clk := newTestStore(t, WithMaxKeys(2), WithShards(1))
	ctx := context.Background()
	fw := algo.FixedWindow{Limit: 1, Window: time.Minute}
	tb := algo.TokenBucket{Rate: 1000, Burst: 1}
	if _, err := s.Apply(ctx, "long", fw, algo.Request{N: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, "short", tb, algo.Request{N: 1}); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Millisecond) // "short" is full again, "long" is still counting
	if _, err := s.Apply(ctx, "new", tb, algo.Request{N: 1}); err != nil {
		t.Fatal(err)
	}
	d, err := s.Apply(ctx, "long", fw, algo.Request{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	if d.Allowed {
		t.Fatal("the busy key was evicted although an idle key could go")
	}
}

func TestCloseStopsSweeper(t *testing.T) {
	s := mustNew(t, WithSweepInterval(time.Millisecond))
	// Close returns once the sweeper has returned (its deferred stopped.Done): a sweeper
	// that Close did not stop keeps Close waiting, which the bound catches. (Counting the
	// process's goroutines instead failed beside CPU burners: 21 after Close, 20 before.)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return in 30 s: the sweeper was not stopped")
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	_, err := s.Apply(context.Background(), "k", algo.GCRA{Rate: 1, Burst: 1}, algo.Request{N: 1})
	if !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Apply after Close: err = %v, want ErrClosed", err)
	}
	if err := s.Refund(context.Background(), "k", algo.GCRA{Rate: 1, Burst: 1}, 1, 0); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Refund after Close: err = %v, want ErrClosed", err)
	}
}

func TestShardsRoundUp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want int }{{1, 1}, {2, 2}, {3, 4}, {17, 32}, {maxShards, maxShards}} {
		s := mustNew(t, WithShards(tc.in), WithSweepInterval(0))
		if got := len(s.shards); got != tc.want {
			t.Errorf("WithShards(%d): %d shards, want %d", tc.in, got, tc.want)
		}
		_ = s.Close()
	}
}

// TestChains drives the per-hash chains: the states of one key under several slots share
// a hash, and a forged entry of another key under the same hash stands for a collision.
// Lookups must tell them apart, and sweeping or removing any link must keep the others.
func TestChains(t *testing.T) {
	t.Parallel()
	s, clk := newTestStore(t, WithShards(1))
	ctx := context.Background()
	short := algo.FixedWindow{Limit: 5, Window: time.Second}
	long := algo.FixedWindow{Limit: 5, Window: time.Hour}
	bucket := algo.TokenBucket{Rate: 1, Burst: 5}
	for _, a := range []algo.Algorithm{short, long, bucket} {
		if _, err := s.Apply(ctx, "k", a, algo.Request{N: 2}); err != nil {
			t.Fatal(err)
		}
	}
	h, sh := s.locate("k")
	// A different key under the same hash, in the middle of the chain's life.
	forged := &entry{key: "not-k", state: bucket.NewState(), fresh: 1 << 62}
	sh.mu.Lock()
	sh.add(h, bucket.Slot(), forged)
	chain := 0 // the entries held under the hash h, whatever their key and slot
	for t := range sh.tables {
		t.each(func(e *entry) bool {
			if e.h == h {
				chain++
			}
			return true
		})
	}
	sh.mu.Unlock()
	if chain != 4 || s.Len() != 4 {
		t.Fatalf("chain of %d, Len %d; want 4 entries on one hash", chain, s.Len())
	}
	// Each slot of "k" sees its own state, never the forged one's.
	for _, a := range []algo.Algorithm{short, long, bucket} {
		d, err := s.Apply(ctx, "k", a, algo.Request{N: 1})
		if err != nil || d.Remaining != 2 {
			t.Fatalf("%s: %+v %v; want Remaining 2 (its own state)", a, d, err)
		}
	}
	// After 2 s the short window and the bucket (1 token/s, 3 missing) are not both fresh:
	// the bucket needs 3 s. Only the short window goes.
	clk.Add(2 * time.Second)
	s.Sweep()
	if got := s.Len(); got != 3 {
		t.Fatalf("after 2 s: Len %d, want 3 (the short window swept)", got)
	}
	clk.Add(2 * time.Second)
	s.Sweep()
	if got := s.Len(); got != 2 {
		t.Fatalf("after 4 s: Len %d, want 2 (the hour window and the forged entry)", got)
	}
	sh.mu.Lock()
	if sh.find(h, "not-k", bucket.Slot()) != forged || sh.find(h, "k", long.Slot()) == nil ||
		sh.find(h, "k", bucket.Slot()) != nil || sh.find(h, "k", short.Slot()) != nil {
		sh.mu.Unlock()
		t.Fatal("the chain lost or kept the wrong entries")
	}
	sh.remove(h, bucket.Slot(), forged)
	sh.remove(h, bucket.Slot(), forged) // removing twice is harmless
	sh.mu.Unlock()
	if got := s.Len(); got != 1 {
		t.Fatalf("Len %d after removing the forged entry, want 1", got)
	}
	d, err := s.Apply(ctx, "k", long, algo.Request{N: 1})
	if err != nil || d.Remaining != 1 {
		t.Fatalf("hour window after the sweeps: %+v %v; want Remaining 1", d, err)
	}
}

// TestMaxKeysLarge checks that a bound near math.MaxInt is split over the shards without
// overflowing into a bound of one key per shard.
func TestMaxKeysLarge(t *testing.T) {
	t.Parallel()
	s := mustNew(t, WithShards(4), WithMaxKeys(math.MaxInt), WithSweepInterval(0))
	defer s.Close()
	if got, want := s.perMax, math.MaxInt/4+1; got != want {
		t.Fatalf("perMax = %d, want %d", got, want)
	}
}

// TestApplyValidatesOnHeldKey: Apply leaves a.Validate out only when the key's entry was
// last written under a itself; an invalid config on a key held under a valid one is
// still reported, and writes nothing.
func TestApplyValidatesOnHeldKey(t *testing.T) {
	t.Parallel()
	s := mustNew(t, WithSweepInterval(0))
	ctx := context.Background()
	valid := algo.TokenBucket{Rate: 1, Burst: 2}
	if _, err := s.Apply(ctx, "k", valid, algo.Request{N: 1}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []algo.Algorithm{
		algo.TokenBucket{Rate: -1, Burst: 2},
		algo.TokenBucket{Rate: math.NaN(), Burst: 2},
		algo.TokenBucket{Rate: 1, Burst: 0},
	} {
		if _, err := s.Apply(ctx, "k", bad, algo.Request{N: 1}); !errors.Is(err, algo.ErrInvalidConfig) {
			t.Errorf("Apply(%v) on a held key = %v, want an error wrapping algo.ErrInvalidConfig", bad, err)
		}
	}
	if d, err := s.Apply(ctx, "k", valid, algo.Request{N: 1}); err != nil || !d.Allowed || d.Remaining != 0 {
		t.Fatalf("Apply after the invalid calls = %+v, %v; want the second of 2 permits", d, err)
	}
}
