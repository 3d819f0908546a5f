package limiter_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

func TestBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l, _ := newTest(t, algo.TokenBucket{Rate: 1, Burst: 1})
	for _, n := range []int64{0, -1} {
		if d, err := l.AllowN(ctx, "k", n); d.Allowed || !errors.Is(err, algo.ErrInvalidRequest) {
			t.Errorf("AllowN(n=%d) = %+v, %v; want algo.ErrInvalidRequest", n, d, err)
		}
		if r, err := l.Reserve(ctx, "k", n, time.Second); r != nil || !errors.Is(err, algo.ErrInvalidRequest) {
			t.Errorf("Reserve(n=%d) = %v, %v; want nil, algo.ErrInvalidRequest", n, r, err)
		}
		if err := l.WaitN(ctx, "k", n); !errors.Is(err, algo.ErrInvalidRequest) {
			t.Errorf("WaitN(n=%d) = %v; want algo.ErrInvalidRequest", n, err)
		}
		if ok, err := l.TryAcquire(ctx, "k", n, time.Second); ok || !errors.Is(err, algo.ErrInvalidRequest) {
			t.Errorf("TryAcquire(n=%d) = %v, %v; want algo.ErrInvalidRequest", n, ok, err)
		}
	}
	if d, err := l.Allow(ctx, ""); d.Allowed || !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("Allow(\"\") = %+v, %v; want store.ErrInvalidKey", d, err)
	}
	if r, err := l.Reserve(ctx, "", 1, time.Second); r != nil || !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("Reserve(\"\") = %v, %v; want store.ErrInvalidKey", r, err)
	}
	if err := l.Wait(ctx, ""); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("Wait(\"\") = %v; want store.ErrInvalidKey", err)
	}
	if ok, err := l.TryAcquire(ctx, "", 1, 0); ok || !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("TryAcquire(\"\") = %v, %v; want store.ErrInvalidKey", ok, err)
	}
}

func TestNewInvalidConfig(t *testing.T) {
	t.Parallel()
	st := teststore.Local(t, local.WithSweepInterval(0))
	t.Cleanup(func() { _ = st.Close() })
	tests := []struct {
		name  string
		s     store.Store
		a     algo.Algorithm
		opts  []limiter.Option
		field string
	}{
		{"nil store", nil, algo.TokenBucket{Rate: 1, Burst: 1}, nil, "store"},
		{"typed nil store", (*local.Store)(nil), algo.TokenBucket{Rate: 1, Burst: 1}, nil, "store"},
		{"nil clock", st, algo.GCRA{Rate: 1, Burst: 1}, []limiter.Option{limiter.WithClock(nil)}, "WithClock"},
		{"nil algorithm", st, nil, nil, "algorithm"},
		{"fixed window limit", st, algo.FixedWindow{Limit: 0, Window: time.Second}, nil, "FixedWindow.Limit"},
		{"fixed window window", st, algo.FixedWindow{Limit: 1, Window: time.Nanosecond}, nil, "FixedWindow.Window"},
		{"sliding log limit", st, algo.SlidingWindowLog{Limit: -1, Window: time.Second}, nil, "SlidingWindowLog.Limit"},
		{"sliding log window", st, algo.SlidingWindowLog{Limit: 1, Window: 1500 * time.Nanosecond}, nil, "SlidingWindowLog.Window"},
		{"sliding counter limit", st, algo.SlidingWindowCounter{Window: time.Second}, nil, "SlidingWindowCounter.Limit"},
		{"sliding counter window", st, algo.SlidingWindowCounter{Limit: 1}, nil, "SlidingWindowCounter.Window"},
		{"token bucket rate", st, algo.TokenBucket{Rate: 0, Burst: 1}, nil, "TokenBucket.Rate"},
		{"token bucket burst", st, algo.TokenBucket{Rate: 1, Burst: 0}, nil, "TokenBucket.Burst"},
		{"leaky bucket rate", st, algo.LeakyBucket{Rate: -2, Capacity: 1}, nil, "LeakyBucket.Rate"},
		{"leaky bucket capacity", st, algo.LeakyBucket{Rate: 1}, nil, "LeakyBucket.Capacity"},
		{"gcra rate", st, algo.GCRA{Burst: 1}, nil, "GCRA.Rate"},
		{"gcra burst", st, algo.GCRA{Rate: 1}, nil, "GCRA.Burst"},
		{"fallback nil", st, algo.GCRA{Rate: 1, Burst: 1}, []limiter.Option{limiter.WithFailurePolicy(limiter.Fallback(nil))}, "Fallback"},
		{"negative timeout", st, algo.GCRA{Rate: 1, Burst: 1}, []limiter.Option{limiter.WithTimeout(-time.Second)}, "WithTimeout"},
		{"breaker rate", st, algo.GCRA{Rate: 1, Burst: 1}, []limiter.Option{limiter.WithCircuitBreaker(limiter.CircuitBreaker{FailureRate: 2})}, "FailureRate"},
		{"breaker cool-down", st, algo.GCRA{Rate: 1, Burst: 1}, []limiter.Option{limiter.WithCircuitBreaker(limiter.CircuitBreaker{CoolDown: -1})}, "CoolDown"},
	}
	for _, tt := range tests {
		l, err := limiter.New(tt.s, tt.a, tt.opts...)
		if l != nil || !errors.Is(err, algo.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%s: New = %v, %v; want an algo.ErrInvalidConfig naming %q", tt.name, l, err, tt.field)
		}
	}
	if !errors.Is(algo.ErrInvalidConfig, algo.ErrInvalidConfig) || !errors.Is(algo.ErrInvalidRequest, algo.ErrInvalidRequest) {
		t.Error("limiter and algo error values differ")
	}
}
