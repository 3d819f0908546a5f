package local

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

// TestFastPathConcurrent runs Apply's lock-free lookup against everything that changes a
// table under the shard's lock: new keys that make it grow, sweeps, evictions and
// Resets of other keys. Every hot key must grant exactly its Burst (the bucket does not
// refill in the test's time): a lookup in a table being replaced, or of an entry being
// taken out, never loses a state nor decides on a dead one.
func TestFastPathConcurrent(t *testing.T) {
	t.Parallel()
	for _, opts := range [][]Option{
		{WithShards(1), WithSweepInterval(0)},
		{WithShards(2), WithSweepInterval(0), WithMaxKeys(3000)},
	} {
		s := mustNew(t, opts...)
		ctx := context.Background()
		const (
			hot     = 32
			burst   = 50
			workers = 4
			calls   = 4000
		)
		a := algo.TokenBucket{Rate: 1e-6, Burst: burst}
		var granted [hot]atomic.Int64
		for k := range hot { // held before the store fills up (WithMaxKeys)
			if d, err := s.Apply(ctx, "hot:"+strconv.Itoa(k), a, algo.Request{N: 1}); err != nil || !d.Allowed {
				t.Fatalf("first Apply of hot:%d = %+v, %v", k, d, err)
			}
			granted[k].Add(1)
		}
		var wg sync.WaitGroup
		for w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range calls {
					k := (i*7 + w*13) % hot
					d, err := s.Apply(ctx, "hot:"+strconv.Itoa(k), a, algo.Request{N: 1})
					if err != nil {
						t.Error(err)
						return
					}
					if d.Allowed {
						granted[k].Add(1)
					}
				}
			}()
		}
		wg.Add(1)
		go func() { // new keys (the tables grow), idle ones (fresh at once), Resets, sweeps
			defer wg.Done()
			idle := algo.FixedWindow{Limit: 1, Window: 1} // fresh again within a µs
			for i := range 6000 {
				k := "cold:" + strconv.Itoa(i)
				if _, err := s.Apply(ctx, k, a, algo.Request{N: 1}); err != nil {
					t.Error(err)
					return
				}
				_, _ = s.Apply(ctx, "idle:"+strconv.Itoa(i), idle, algo.Request{N: 1})
				if i%50 == 0 {
					_ = s.Reset(ctx, k, a)
					s.Sweep()
				}
			}
		}()
		wg.Wait()
		for k := range granted {
			if got := granted[k].Load(); got != burst {
				t.Errorf("%v: hot:%d granted %d, want exactly %d", opts, k, got, burst)
			}
		}
		_ = s.Close()
	}
}

// TestTableGrowsAndShrinks checks the table's bookkeeping over many inserts and removals:
// every key found while held, none after its removal, each visiting every entry once.
func TestTableGrowsAndShrinks(t *testing.T) {
	t.Parallel()
	var tb table
	h := newHasher()
	es := make([]*entry, 5000)
	for i := range es {
		es[i] = &entry{key: "k" + strconv.Itoa(i), h: h.hash("k" + strconv.Itoa(i)), state: 1}
		tb.add(es[i])
	}
	for round := range 3 {
		for i, e := range es {
			if (i+round)%3 == 0 {
				if !tb.remove(e) {
					t.Fatalf("round %d: remove(%s) = false", round, e.key)
				}
				if tb.find(e.h, e.key) != nil {
					t.Fatalf("round %d: %s found after removal", round, e.key)
				}
				tb.add(e)
			}
			if got := tb.find(e.h, e.key); got != e {
				t.Fatalf("round %d: find(%s) = %v", round, e.key, got)
			}
		}
	}
	n := 0
	tb.each(func(*entry) bool { n++; return true })
	if n != len(es) {
		t.Fatalf("each visited %d entries, want %d", n, len(es))
	}
	if gs := tb.cur.Load(); tb.used*4 > len(gs.g)*groupSlots*3 {
		t.Fatalf("%d of %d slots used", tb.used, len(gs.g)*groupSlots)
	}
}

// TestFastPathTakesNoShardLock: a call on a key last written under the same config
// decides while its shard's lock is held elsewhere: calls on distinct keys never wait
// for, nor write, the shard's lock.
func TestFastPathTakesNoShardLock(t *testing.T) {
	t.Parallel()
	s := mustNew(t, WithShards(1), WithSweepInterval(0))
	ctx := context.Background()
	// The shard's first table, and another slot's.
	for _, a := range []algo.Algorithm{algo.TokenBucket{Rate: 1, Burst: 10}, algo.FixedWindow{Limit: 10, Window: time.Hour}} {
		if _, err := s.Apply(ctx, "k", a, algo.Request{N: 1}); err != nil {
			t.Fatal(err)
		}
		sh := &s.shards[0]
		sh.mu.Lock()
		done := make(chan algo.Decision)
		go func() {
			d, _ := s.Apply(ctx, "k", a, algo.Request{N: 1})
			done <- d
		}()
		select {
		case d := <-done:
			if !d.Allowed || d.Remaining != 8 {
				t.Errorf("%s: Apply under a held shard lock = %+v, want the second of 10 permits", a, d)
			}
		case <-time.After(10 * time.Second): // a failure deadline, not a synchronisation
			t.Fatalf("%s: Apply on an existing key waited for the shard's lock", a)
		}
		sh.mu.Unlock()
	}
}
