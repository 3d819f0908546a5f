package leasing_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/leasing"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// spy wraps a store (local or Redis), counts the calls that reach it and runs hook after
// each granted or denied Apply, so that a test can act in the middle of a leasing store's
// call to it (a Reset while a slice is in flight) deterministically, on one goroutine.
type spy struct {
	store.Store
	applies, refunds atomic.Int64
	hook             func(key string, req algo.Request)
}

func (s *spy) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	s.applies.Add(1)
	d, err := s.Store.Apply(ctx, key, a, req)
	if h := s.hook; h != nil && err == nil {
		h(key, req)
	}
	return d, err
}

func (s *spy) Refund(ctx context.Context, key string, a algo.Algorithm, n int64, at int64) error {
	s.refunds.Add(1)
	return s.Store.Refund(ctx, key, a, n, at)
}

func (s *spy) Peek(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	return s.Store.(store.Admin).Peek(ctx, key, a, req)
}

func (s *spy) Reset(ctx context.Context, key string, rules ...algo.Algorithm) error {
	return s.Store.(store.Admin).Reset(ctx, key, rules...)
}

func (s *spy) Clock() clockx.Clock { return s.Store.(store.Clocked).Clock() }

// calls is what reached the inner store.
func (s *spy) calls() int64 { return s.applies.Load() + s.refunds.Load() }

// adminStore is what the scripted histories drive: a plain store (through a spy) or a
// leasing store over one.
type adminStore interface {
	store.Store
	store.Admin
}

// backend makes inner stores of one kind: start prepares it for a test (starts a Redis
// server) and returns a maker of fresh stores on a clock, each with state of its own (its
// own prefix on Redis), so that a plain and a leased run never share state.
type backend struct {
	name  string
	start func(t *testing.T) func(clk clockx.Clock) store.Store
}

// backends returns the local store and, when redis-server is installed (else the Redis
// cases skip, or fail with LIMITER_REQUIRE_REDIS=1), the Redis store with the fake clock
// as its client clock.
func backends() []backend {
	return []backend{
		{"local", func(t *testing.T) func(clockx.Clock) store.Store {
			return func(clk clockx.Clock) store.Store {
				s, err := local.New(local.WithClock(clk), local.WithSweepInterval(0))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				return s
			}
		}},
		{"redis", func(t *testing.T) func(clockx.Clock) store.Store {
			srv := redistest.Start(t)
			var n atomic.Int64
			return func(clk clockx.Clock) store.Store {
				c := redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true})
				t.Cleanup(func() { _ = c.Close() })
				s, err := distributed.New(c, distributed.WithClientClock(clk), distributed.WithTimeout(10*time.Second),
					distributed.WithPrefix(fmt.Sprintf("s%d:", n.Add(1))))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				return s
			}
		}},
	}
}

// pair returns a plain store and a leasing store (slice, opts) over fresh inner stores of
// kind b on one fake clock, each inner store behind a spy.
func pair(t *testing.T, b backend, slice int64, opts ...leasing.Option) (plain, leased *spy, ls *leasing.Store, clk *clockx.Fake) {
	t.Helper()
	clk = clockx.NewFake(epoch)
	open := b.start(t)
	plain = &spy{Store: open(clk)}
	leased = &spy{Store: open(clk)}
	ls, err := leasing.New(leased, slice, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ls.Close() })
	return plain, leased, ls, clk
}

// grant applies one request and reports whether it was granted, failing the test on an error.
func grant(t *testing.T, s store.Store, key string, a algo.Algorithm) bool {
	t.Helper()
	d, err := s.Apply(context.Background(), key, a, algo.Request{N: 1})
	if err != nil {
		t.Fatal(err)
	}
	return d.Allowed
}
