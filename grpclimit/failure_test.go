package grpclimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/grpclimit"
	"github.com/ratekit/limiter/store"
)

// downLimiter returns a limiter whose store is down, with policy p.
func downLimiter(tb testing.TB, p limiter.FailurePolicy) (*limiter.Limiter, *failingStore) {
	tb.Helper()
	st := &failingStore{}
	l, err := limiter.New(st, algo.TokenBucket{Rate: 10, Burst: 10}, limiter.WithFailurePolicy(p))
	if err != nil {
		tb.Fatalf("limiter.New: %v", err)
	}
	return l, st
}

// recordErrors returns an error handler option that keeps the last error it got.
func recordErrors(got *error) grpclimit.Option {
	return grpclimit.WithErrorHandler(func(ctx context.Context, m string, err error) error {
		*got = err
		return grpclimit.DefaultErrorHandler(ctx, m, err)
	})
}

func TestStoreDown(t *testing.T) {
	t.Parallel()
	t.Run("fail-closed", func(t *testing.T) {
		t.Parallel()
		l, st := downLimiter(t, limiter.FailClosed)
		var handled error
		s := startServer(t, newInterceptors(t, l, recordErrors(&handled)), true)
		c := s.dial(t, "192.0.2.1:1000")
		want(t, "check", check(t, c), outcome{codes.Unavailable, -1})
		if !errors.Is(handled, store.ErrUnavailable) {
			t.Errorf("error handler got %v, want one wrapping store.ErrUnavailable", handled)
		}
		want(t, "watch", watch(t, c), outcome{codes.Unavailable, -1})
		if got, w := st.calls.Load(), int64(2); got != w {
			t.Errorf("store called %d times, want %d", got, w)
		}
		if s.served() != 0 {
			t.Error("handler called while the store is down under FailClosed")
		}
	})
	t.Run("fail-open", func(t *testing.T) {
		t.Parallel()
		l, st := downLimiter(t, limiter.FailOpen)
		var handled error
		s := startServer(t, newInterceptors(t, l, recordErrors(&handled)), true)
		c := s.dial(t, "192.0.2.1:1000")
		for i := 0; i < 3; i++ {
			want(t, "check", check(t, c), ok)
			want(t, "watch", watch(t, c), ok)
		}
		if got, w := s.served(), int64(6); got != w {
			t.Errorf("handler served %d calls, want %d", got, w)
		}
		// The limiter's circuit breaker judges a failure rate over at least 20 calls
		// (limiter.CircuitBreaker's default MinCalls): all 6 calls reach the store.
		if got, w := st.calls.Load(), int64(6); got != w {
			t.Errorf("store called %d times, want %d", got, w)
		}
		if handled != nil {
			t.Errorf("error handler called under FailOpen with %v", handled)
		}
	})
	t.Run("fallback", func(t *testing.T) {
		t.Parallel()
		fb, clk, _ := newLimiter(t, algo.TokenBucket{Rate: 1, Burst: 1})
		l, _ := downLimiter(t, limiter.Fallback(fb))
		s := startServer(t, newInterceptors(t, l), true)
		c := s.dial(t, "192.0.2.1:1000")
		// A fallback denial is a rate-limit denial, with the fallback's RetryInfo.
		want(t, "fallback allows", check(t, c), ok)
		want(t, "fallback denies", watch(t, c), outcome{codes.ResourceExhausted, time.Second})
		clk.Add(time.Second)
		want(t, "fallback allows again", watch(t, c), ok)
	})
}

// TestStoreClosed checks that a call arriving after the store was closed (a shutdown)
// gets Unavailable, whatever the failure policy: a closed store is not a failure to
// fail open on.
func TestStoreClosed(t *testing.T) {
	t.Parallel()
	for _, p := range []limiter.FailurePolicy{limiter.FailClosed, limiter.FailOpen} {
		l, _, st := newLimiter(t, algo.TokenBucket{Rate: 1, Burst: 3}, limiter.WithFailurePolicy(p))
		var handled error
		s := startServer(t, newInterceptors(t, l, recordErrors(&handled)), true)
		c := s.dial(t, "192.0.2.1:1000")
		want(t, "before close", check(t, c), ok)
		_ = st.Close()
		want(t, "check after close", check(t, c), outcome{codes.Unavailable, -1})
		want(t, "watch after close", watch(t, c), outcome{codes.Unavailable, -1})
		if !errors.Is(handled, store.ErrClosed) {
			t.Errorf("error handler got %v, want one wrapping store.ErrClosed", handled)
		}
		if got, w := s.served(), int64(1); got != w {
			t.Errorf("handler served %d calls, want %d", got, w)
		}
	}
}
