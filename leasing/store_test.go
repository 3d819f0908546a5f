package leasing_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/leasing"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// counting is a store.Store that counts the calls reaching the store it wraps.
type counting struct {
	*local.Store
	applies, refunds atomic.Int64
}

func (c *counting) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	c.applies.Add(1)
	return c.Store.Apply(ctx, key, a, req)
}

func (c *counting) Refund(ctx context.Context, key string, a algo.Algorithm, n int64, at int64) error {
	c.refunds.Add(1)
	return c.Store.Refund(ctx, key, a, n, at)
}

func newLeased(t *testing.T, slice int64, opts ...leasing.Option) (*leasing.Store, *counting, *clockx.Fake) {
	t.Helper()
	clk := clockx.NewFake(epoch)
	ls, err := local.New(local.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	inner := &counting{Store: ls}
	s, err := leasing.New(inner, slice, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, inner, clk
}

func TestLeaseServesLocally(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, inner, clk := newLeased(t, 10, leasing.WithTTL(time.Second))
	if s.Clock() != store.Clocked(inner).Clock() {
		t.Fatal("the leases are not kept on the inner store's clock")
	}
	a := algo.FixedWindow{Limit: 25, Window: time.Minute}
	admitted := 0
	for i := 0; i < 40; i++ {
		d, err := s.Apply(ctx, "k", a, algo.Request{N: 1})
		if err != nil {
			t.Fatal(err)
		}
		if d.Allowed {
			admitted++
		}
	}
	// Two slices of 10, then the tail of 5 one by one, then denials: exactly the limit.
	if admitted != 25 {
		t.Errorf("admitted %d, want the limit 25", admitted)
	}
	if got := inner.applies.Load(); got >= 40 {
		t.Errorf("%d calls reached the inner store for 40 requests", got)
	}
	// A lease's leftover goes back when it ends and the key is used again.
	clk.Add(time.Minute) // next window
	if d, _ := s.Apply(ctx, "k", a, algo.Request{N: 1}); !d.Allowed || d.Remaining != 24 {
		t.Fatalf("new window: %+v, want granted from a new slice, 9 left in it + 15 in the store", d)
	}
	clk.Add(2 * time.Second) // past the TTL
	before := inner.refunds.Load()
	if d, _ := s.Apply(ctx, "k", a, algo.Request{N: 1}); !d.Allowed {
		t.Fatalf("%+v", d)
	}
	if inner.refunds.Load() != before+1 {
		t.Error("the ended lease's leftover was not given back")
	}
	// The store counts the first permit (its 9 siblings came back) and the new slice:
	// 14 left, 13 after the peeked request.
	if p, _ := inner.Peek(ctx, "k", a, algo.Request{N: 1}); p.Remaining != 14 {
		t.Errorf("a peek at the store shows %d, want 14 (25 − the first permit − a slice of 10)", p.Remaining)
	}
}

func TestLeaseRefundAndPassThrough(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, inner, _ := newLeased(t, 5)
	a := algo.TokenBucket{Rate: 1, Burst: 100}
	d, err := s.Apply(ctx, "k", a, algo.Request{N: 2})
	if err != nil || !d.Allowed {
		t.Fatalf("%+v, %v", d, err)
	}
	calls := inner.applies.Load()
	if err := s.Refund(ctx, "k", a, 2, d.At); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ { // the refund went back to the lease: 5 again
		if d, _ := s.Apply(ctx, "k", a, algo.Request{N: 1}); !d.Allowed {
			t.Fatalf("%+v", d)
		}
	}
	if inner.applies.Load() != calls || inner.refunds.Load() != 0 {
		t.Errorf("the refund or the grants reached the inner store")
	}
	// Reservations, larger requests and smooth limiters are not leased.
	for _, c := range []struct {
		a   algo.Algorithm
		req algo.Request
	}{
		{a, algo.Request{N: 1, MaxWait: time.Second}},
		{a, algo.Request{N: 6}},
		{algo.SmoothBursty{Rate: 10}, algo.Request{N: 1}},
	} {
		before := inner.applies.Load()
		if _, err := s.Apply(ctx, "k", c.a, c.req); err != nil {
			t.Fatal(err)
		}
		if inner.applies.Load() != before+1 {
			t.Errorf("%s %+v: want one call to the inner store", c.a.Name(), c.req)
		}
	}
}

func TestLeaseCloseGivesBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clockx.NewFake(epoch)
	ls, err := local.New(local.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	s, err := leasing.New(ls, 10)
	if err != nil {
		t.Fatal(err)
	}
	a := algo.FixedWindow{Limit: 100, Window: time.Minute}
	if _, err := s.Apply(ctx, "k", a, algo.Request{N: 1}); err != nil {
		t.Fatal(err)
	}
	// Close gives the 9 back to the store, then closes it: peek before the close.
	probe, _ := local.New(local.WithClock(clk))
	defer probe.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Apply(ctx, "k", a, algo.Request{N: 1}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("after Close: %v, want store.ErrClosed", err)
	}
	if _, err := ls.Apply(ctx, "k", a, algo.Request{N: 1}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("the inner store is not closed: %v", err)
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	ls, _ := local.New()
	defer ls.Close()
	for name, f := range map[string]func() error{
		"nil store": func() error { _, err := leasing.New(nil, 1); return err },
		"slice 0":   func() error { _, err := leasing.New(ls, 0); return err },
		"ttl 0":     func() error { _, err := leasing.New(ls, 1, leasing.WithTTL(0)); return err },
		"keys 0":    func() error { _, err := leasing.New(ls, 1, leasing.WithMaxKeys(0)); return err },
	} {
		if err := f(); !errors.Is(err, algo.ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", name, err)
		}
	}
}
