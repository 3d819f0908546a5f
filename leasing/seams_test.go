package leasing_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/leasing"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// TestEvictionGivesBackToItsOwnKey is issue 21's scripted history: one hot key of
// FixedWindow{10 per minute} leased in slices of 5, interleaved with new keys in a table
// of one lease (WithMaxKeys(1)), so that each new key evicts the hot key's lease and the
// hot key evicts the new key's. The evicted lease's leftover must go back to its own key:
// given to the key being created, it granted the hot key 55 in one window. (Before the
// fix WithMaxKeys(1) still held one lease per shard of 32, so the history needs many new
// keys to land in the hot key's shard.) The fake clock
// never moves, so everything happens in one window: the hot key gets at most 10, as on
// the plain store.
func TestEvictionGivesBackToItsOwnKey(t *testing.T) {
	t.Parallel()
	a := algo.FixedWindow{Limit: 10, Window: time.Minute}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			plain, _, ls, _ := pair(t, b, 5, leasing.WithMaxKeys(1))
			history := func(s adminStore) (hot int) {
				for i := range 200 {
					for range 4 {
						if grant(t, s, "hot", a) {
							hot++
						}
					}
					grant(t, s, fmt.Sprintf("new-%d", i), a)
				}
				return hot
			}
			want, got := history(plain), history(ls)
			if got > want || got > int(a.Limit) {
				t.Errorf("the hot key got %d grants in one window of limit %d (plain store: %d)", got, a.Limit, want)
			}
			t.Logf("hot key: %d leased, %d plain", got, want)
		})
	}
}

// TestEvictionUnderConcurrency is the concurrent history on a fake clock that
// does not move: FixedWindow{1000 per minute}, slices of 100, WithMaxKeys(32), 8
// goroutines on one hot key and 4 creating new keys. Whatever the schedule, the hot key
// gets at most its limit (it got 14,485–34,074 in one window).
func TestEvictionUnderConcurrency(t *testing.T) {
	t.Parallel()
	a := algo.FixedWindow{Limit: 1000, Window: time.Minute}
	_, _, ls, _ := pair(t, backends()[0], 100, leasing.WithMaxKeys(32))
	var hot, requests atomic.Int64
	var stop atomic.Bool
	var hotWG, newWG sync.WaitGroup
	for range 8 {
		hotWG.Add(1)
		go func() { // the hot key, until the new keys are all made
			defer hotWG.Done()
			for !stop.Load() {
				requests.Add(1)
				d, err := ls.Apply(context.Background(), "hot", a, algo.Request{N: 1})
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					hot.Add(1)
				}
				runtime.Gosched() // let the key makers in between
			}
		}()
	}
	for g := range 4 {
		newWG.Add(1)
		go func() {
			defer newWG.Done()
			for i := range 500 {
				if _, err := ls.Apply(context.Background(), fmt.Sprintf("new-%d-%d", g, i), a, algo.Request{N: 1}); err != nil {
					t.Error(err)
					return
				}
				runtime.Gosched()
			}
		}()
	}
	newWG.Wait()
	stop.Store(true)
	hotWG.Wait()
	if hot.Load() > a.Limit {
		t.Errorf("the hot key got %d grants in one window of limit %d", hot.Load(), a.Limit)
	}
	t.Logf("hot key: %d of %d requests granted", hot.Load(), requests.Load())
}

// TestRefillDuringReset resets the key while the leasing store's slice is in flight (the
// inner store has counted it; the answer has not landed yet). The slice was counted in
// the state Reset forgets, so the lease it lands on must not grant from it: the leased
// store grants no more after the Reset than the plain store, whose one request in flight
// at the Reset is the only grant the Reset forgets.
func TestRefillDuringReset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := algo.FixedWindow{Limit: 10, Window: time.Minute}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			plain, inner, ls, _ := pair(t, b, 5)
			history := func(s adminStore, sp *spy) (granted int) {
				done := false
				sp.hook = func(key string, _ algo.Request) {
					if !done {
						done = true
						if err := s.Reset(ctx, "hot", a); err != nil {
							t.Error(err)
						}
					}
				}
				for range 30 {
					if grant(t, s, "hot", a) {
						granted++
					}
				}
				sp.hook = nil
				return granted
			}
			want, got := history(plain, plain), history(ls, inner)
			if got > want {
				t.Errorf("leased: %d grants in one window of limit %d with a Reset during the first call, plain store: %d", got, a.Limit, want)
			}
			t.Logf("%d leased, %d plain", got, want)
		})
	}
}

// TestRefundAfterReset is issue 21's second case: 10 grants in a window of limit 10, a
// Reset, then a Refund of those 10 grants. Through the lease the refund went back into
// the lease the Reset had only emptied, and was granted again: 20 in the window, where
// the plain store (whose refunds land on the forgotten window's fresh state) gives 10.
func TestRefundAfterReset(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := algo.FixedWindow{Limit: 10, Window: time.Minute}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			plain, _, ls, _ := pair(t, b, 10)
			history := func(s adminStore) (after int) {
				var ats []int64
				for range 10 {
					d, err := s.Apply(ctx, "k", a, algo.Request{N: 1})
					if err != nil || !d.Allowed {
						t.Fatalf("%+v, %v", d, err)
					}
					ats = append(ats, d.At)
				}
				if err := s.Reset(ctx, "k", a); err != nil {
					t.Fatal(err)
				}
				for _, at := range ats {
					if err := s.Refund(ctx, "k", a, 1, at); err != nil {
						t.Fatal(err)
					}
				}
				for range 30 {
					if grant(t, s, "k", a) {
						after++
					}
				}
				return after
			}
			want, got := history(plain), history(ls)
			if got > want || got > int(a.Limit) {
				t.Errorf("after the Reset and the refunds: %d granted in a window of limit %d (plain store: %d)", got, a.Limit, want)
			}
		})
	}
}

// TestCloseGivesBackInFlight closes the store while a slice is in flight: Close waits for
// it to land and gives its leftover back, so the inner store ends with every permit but
// the one granted (an orphan's leftover was never given back).
func TestCloseGivesBackInFlight(t *testing.T) {
	t.Parallel()
	a := algo.FixedWindow{Limit: 100, Window: time.Minute}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			_, inner, ls, _ := pair(t, b, 10)
			closed := make(chan error, 1)
			inner.hook = func(string, algo.Request) {
				inner.hook = nil
				go func() { closed <- ls.Close() }()
			}
			if !grant(t, ls, "k", a) {
				t.Fatal("denied")
			}
			if err := <-closed; err != nil {
				t.Fatal(err)
			}
			// The inner store is closed now: the spy counted what Close gave back.
			if got := inner.refunds.Load(); got != 1 {
				t.Errorf("%d refunds reached the inner store, want the leftover given back once", got)
			}
		})
	}
}

// TestPeekSeesTheLease checks that Peek answers what Apply would: a lease holding
// permits grants while the inner store, whose whole quota the lease took, would deny.
func TestPeekSeesTheLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := algo.FixedWindow{Limit: 10, Window: time.Minute}
	_, _, ls, _ := pair(t, backends()[0], 10)
	req := algo.Request{N: 1}
	for i := range 11 {
		p, err := ls.Peek(ctx, "k", a, req)
		if err != nil {
			t.Fatal(err)
		}
		d, err := ls.Apply(ctx, "k", a, req)
		if err != nil {
			t.Fatal(err)
		}
		// Peek's Remaining is what is there before the request (algo.Peek): a grant's
		// Remaining plus what it took, a denial's as it is.
		want := d.Remaining
		if d.Allowed {
			want += req.N
		}
		if p.Allowed != d.Allowed || p.Remaining != want {
			t.Errorf("request %d: Peek %+v, Apply %+v", i+1, p, d)
		}
	}
}

// TestLeftoversConserved runs hot and new keys through a small lease table from many
// goroutines (leases evicted while other callers hold or fill them), then closes the
// store, on a fake clock that does not move: every permit a lease took and did not grant
// must be back in its own key, so that each key's count in the inner store equals the
// grants it made. A leftover given to another key, or left in an orphaned lease that
// Close does not see, breaks the equality.
func TestLeftoversConserved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := algo.FixedWindow{Limit: 1_000_000, Window: time.Hour}
	clk := clockx.NewFake(epoch)
	inner, err := local.New(local.WithClock(clk), local.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer inner.Close()
	ls, err := leasing.New(shared{inner}, 10, leasing.WithMaxKeys(4))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	grants := map[string]int64{}
	var wg sync.WaitGroup
	for g := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				key := fmt.Sprintf("hot-%d", g%2)
				if g >= 8 {
					key = fmt.Sprintf("new-%d-%d", g, i/3)
				}
				d, err := ls.Apply(ctx, key, a, algo.Request{N: 1})
				if err != nil {
					t.Error(err)
					return
				}
				if d.Allowed {
					mu.Lock()
					grants[key]++
					mu.Unlock()
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	if err := ls.Close(); err != nil {
		t.Fatal(err)
	}
	for key, n := range grants {
		p, err := inner.Peek(ctx, key, a, algo.Request{N: 1})
		if err != nil {
			t.Fatal(err)
		}
		if used := a.Limit - p.Remaining; used != n {
			t.Errorf("%s: %d granted, %d counted by the inner store after Close", key, n, used)
		}
	}
}

// closing is an inner store whose Close only marks it closed, keeping the state for the
// test to read, and which refuses the refunds that reach it after Close, as a closed store
// does (their permits are lost), counting them. Before the first refund it runs hook.
type closing struct {
	shared
	closed atomic.Bool
	late   atomic.Int64
	hook   func()
}

func (c *closing) Refund(ctx context.Context, key string, a algo.Algorithm, n int64, at int64) error {
	if h := c.hook; h != nil {
		c.hook = nil
		h()
	}
	if c.closed.Load() {
		c.late.Add(1)
		return store.ErrClosed
	}
	return c.shared.Refund(ctx, key, a, n, at)
}

func (c *closing) Close() error {
	c.closed.Store(true)
	return nil
}

// TestCloseWaitsForAnEvictionsGiveBack: a new key evicts a lease from a full table and
// gives its leftover back; Close, called meanwhile, must let that leftover reach the inner
// store before closing it (it closed it first, and the leftover was lost: the key's
// inner count stayed at the slice, not at the one permit granted). The test starts Close
// from inside the give-back and waits until Close has either finished or is waiting for
// the give-back (its goroutine seen blocked in Close on a lock).
func TestCloseWaitsForAnEvictionsGiveBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := algo.FixedWindow{Limit: 100, Window: time.Hour}
	clk := clockx.NewFake(epoch)
	l, err := local.New(local.WithClock(clk), local.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	inner := &closing{shared: shared{l}}
	ls, err := leasing.New(inner, 10, leasing.WithMaxKeys(1))
	if err != nil {
		t.Fatal(err)
	}
	if !grant(t, ls, "a", a) { // a's lease: a slice of 10, 9 left
		t.Fatal("denied")
	}
	closed := make(chan error, 1)
	inner.hook = func() { // in the give-back of a's leftover, b evicting a's lease
		go func() { closed <- ls.Close() }()
		buf := make([]byte, 1<<20)
		for {
			select {
			case err := <-closed:
				closed <- err
				return
			default:
			}
			for g := range strings.SplitSeq(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
				if strings.Contains(g, "sync.(*RWMutex).Lock(") && strings.Contains(g, "leasing.(*Store).Close(") &&
					strings.Contains(g, "TestCloseWaitsForAnEvictionsGiveBack") { // this test's Close
					return // a Close waits for the give-back
				}
			}
			runtime.Gosched()
		}
	}
	if _, err := ls.Apply(ctx, "b", a, algo.Request{N: 1}); err != nil && !errors.Is(err, store.ErrClosed) {
		t.Fatal(err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	if n := inner.late.Load(); n > 0 {
		t.Errorf("%d leftovers reached the inner store after Close", n)
	}
	p, err := l.Peek(ctx, "a", a, algo.Request{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	if used := a.Limit - p.Remaining; used != 1 {
		t.Errorf("a: 1 granted, %d counted by the inner store after Close", used)
	}
}

// TestRefundOfAnEarlierSliceAtTheSameInstant: two slices of one key taken at the same
// instant have the same At, so a refund of the first slice's grant cannot be told from one
// of the second's. Credited to the second lease (as it was), the permit was granted again
// later from a slice counted at the earlier instant: on a sliding log, 2 permits counted
// at 0 were used at 5 ms, beyond the 1 (processes × slice) the package documents. Such a
// refund goes to the inner store.
func TestRefundOfAnEarlierSliceAtTheSameInstant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := algo.SlidingWindowLog{Limit: 3, Window: 7 * time.Millisecond}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			_, _, ls, clk := pair(t, b, 1)
			var ats []int64
			for range 2 { // two slices of 1, both at the same instant
				d, err := ls.Apply(ctx, "k", a, algo.Request{N: 1})
				if err != nil || !d.Allowed {
					t.Fatalf("%+v, %v", d, err)
				}
				ats = append(ats, d.At)
			}
			clk.Add(5 * time.Millisecond)
			late := 0 // grants from a slice counted before now
			for _, at := range ats {
				if err := ls.Refund(ctx, "k", a, 1, at); err != nil {
					t.Fatal(err)
				}
				d, err := ls.Apply(ctx, "k", a, algo.Request{N: 1})
				if err != nil {
					t.Fatal(err)
				}
				if d.Allowed && d.At < clk.Now().UnixMicro() {
					late++
				}
			}
			if late > 1 {
				t.Errorf("%d permits counted before now were granted at 5 ms, more than the slice (1)", late)
			}
		})
	}
}

// TestLeaseEndsWithItsWindowToTheMicrosecond: the inner store decides in whole µs, so a
// fixed window's slice taken at 10.9375 ms ends at the window's end, 20 ms, not half a µs
// later, when a grant from it would be used in the next window beside that window's own
// limit (4 grants in a window of limit 3 on Redis).
func TestLeaseEndsWithItsWindowToTheMicrosecond(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := algo.FixedWindow{Limit: 3, Window: 10 * time.Millisecond}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			_, _, ls, clk := pair(t, b, 2)
			start := clk.Now().Truncate(10 * time.Millisecond)
			clk.Set(start.Add(10*time.Millisecond + 937500*time.Nanosecond))
			if d, err := ls.Apply(ctx, "k", a, algo.Request{N: 1}); err != nil || !d.Allowed {
				t.Fatalf("%+v, %v", d, err)
			}
			clk.Set(start.Add(20 * time.Millisecond)) // the next window begins
			d, err := ls.Apply(ctx, "k", a, algo.Request{N: 1})
			if err != nil || !d.Allowed {
				t.Fatalf("%+v, %v", d, err)
			}
			if d.At < clk.Now().UnixMicro() {
				t.Errorf("granted at 20 ms from the slice of the window before (At %d µs before now)", clk.Now().UnixMicro()-d.At)
			}
		})
	}
}
