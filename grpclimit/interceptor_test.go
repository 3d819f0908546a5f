package grpclimit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/grpclimit"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/store"
)

// TestUnaryAllowDeny checks that calls within the limit are served, the next one gets
// ResourceExhausted with the exact RetryAfter in a RetryInfo the client decodes, and that
// the limit comes back on the fake clock.
func TestUnaryAllowDeny(t *testing.T) {
	t.Parallel()
	l, clk, _ := newLimiter(t, algo.TokenBucket{Rate: 4, Burst: 2})
	s := startServer(t, newInterceptors(t, l), true)
	c := s.dial(t, "192.0.2.1:1000")

	want(t, "call 1", check(t, c), ok)
	want(t, "call 2", check(t, c), ok)
	want(t, "call 3", check(t, c), outcome{codes.ResourceExhausted, 250 * time.Millisecond})
	clk.Add(100 * time.Millisecond)
	want(t, "call 4, 100ms later", check(t, c), outcome{codes.ResourceExhausted, 150 * time.Millisecond})
	clk.Add(150 * time.Millisecond)
	want(t, "call 5, when RetryInfo said", check(t, c), ok)
	if got, w := s.served(), int64(3); got != w {
		t.Errorf("handler served %d calls, want %d", got, w)
	}

	err := check(t, c)
	if got, w := status.Convert(err).Message(), "grpclimit: rate limit exceeded"; got != w {
		t.Errorf("denial message %q, want %q", got, w)
	}
}

// TestStream checks the stream interceptor: a stream is limited once, when it opens,
// and shares the key's limit with unary calls.
func TestStream(t *testing.T) {
	t.Parallel()
	l, clk, _ := newLimiter(t, algo.FixedWindow{Limit: 2, Window: time.Minute})
	s := startServer(t, newInterceptors(t, l), true)
	c := s.dial(t, "192.0.2.1:1000")

	want(t, "watch 1", watch(t, c), ok)
	want(t, "check", check(t, c), ok)
	want(t, "watch 2", watch(t, c), outcome{codes.ResourceExhausted, time.Minute})
	clk.Add(45 * time.Second)
	want(t, "watch 3, 45s later", watch(t, c), outcome{codes.ResourceExhausted, 15 * time.Second})
	clk.Add(15 * time.Second)
	want(t, "watch 4, next window", watch(t, c), ok)
	if got, w := s.served(), int64(3); got != w {
		t.Errorf("handler served %d calls, want %d", got, w)
	}
}

// TestNeverGranted checks that a call costing more than the limit ever grants is denied
// without RetryInfo: no delay would help.
func TestNeverGranted(t *testing.T) {
	t.Parallel()
	l, _, _ := newLimiter(t, algo.TokenBucket{Rate: 1, Burst: 2})
	lim := newInterceptors(t, l, grpclimit.WithCost(func(_ context.Context, m string) int64 {
		if m == watchMethod {
			return 3
		}
		return 2
	}))
	s := startServer(t, lim, true)
	c := s.dial(t, "192.0.2.1:1000")
	want(t, "watch costing 3 of 2", watch(t, c), outcome{codes.ResourceExhausted, -1})
	want(t, "check costing 2 of 2", check(t, c), ok)
	want(t, "check costing 2, none left", check(t, c), outcome{codes.ResourceExhausted, 2 * time.Second})
}

// TestCost checks cost 0 (exempt) and a negative cost (the error handler, Internal).
func TestCost(t *testing.T) {
	t.Parallel()
	l, _, _ := newLimiter(t, algo.FixedWindow{Limit: 1, Window: time.Minute})
	var handled error
	lim := newInterceptors(t, l,
		grpclimit.WithCost(func(_ context.Context, m string) int64 {
			if m == watchMethod {
				return -1
			}
			return 0
		}),
		grpclimit.WithErrorHandler(func(ctx context.Context, m string, err error) error {
			handled = err
			return grpclimit.DefaultErrorHandler(ctx, m, err)
		}))
	s := startServer(t, lim, true)
	c := s.dial(t, "192.0.2.1:1000")
	for i := 0; i < 3; i++ {
		want(t, "check costing 0", check(t, c), ok)
	}
	want(t, "watch costing -1", watch(t, c), outcome{codes.Internal, -1})
	if !errors.Is(handled, algo.ErrInvalidRequest) {
		t.Errorf("error handler got %v, want one wrapping algo.ErrInvalidRequest", handled)
	}
	if got, w := s.served(), int64(3); got != w {
		t.Errorf("handler served %d calls, want %d", got, w)
	}
}

// TestSkipMethods checks that a skipped method is served without a key or a permit, and
// that the others are still limited.
func TestSkipMethods(t *testing.T) {
	t.Parallel()
	l, _, _ := newLimiter(t, algo.FixedWindow{Limit: 1, Window: time.Minute})
	lim := newInterceptors(t, l,
		grpclimit.WithSkipMethods(checkMethod),
		grpclimit.WithSkipMethods(), // adds nothing
		grpclimit.WithKey(byMetadata(t, "x-api-key")))
	s := startServer(t, lim, true)
	c := s.dial(t, "192.0.2.1:1000")
	for i := 0; i < 3; i++ {
		// No x-api-key: a key would fail, so the method must be skipped before the key.
		want(t, "skipped check", check(t, c), ok)
	}
	want(t, "watch without key", watch(t, c), outcome{codes.InvalidArgument, -1})
	want(t, "watch 1", watch(t, c, "x-api-key", "k"), ok)
	want(t, "watch 2", watch(t, c, "x-api-key", "k"), outcome{codes.ResourceExhausted, time.Minute})
}

// TestNew checks the constructor's configuration errors and that nil options are
// ignored.
func TestNew(t *testing.T) {
	t.Parallel()
	if lim, err := grpclimit.New(nil); !errors.Is(err, algo.ErrInvalidConfig) || lim != nil {
		t.Errorf("New(nil) = %v, %v; want nil and an error wrapping algo.ErrInvalidConfig", lim, err)
	}
	l, _, _ := newLimiter(t, algo.FixedWindow{Limit: 1, Window: time.Minute})
	for name, opt := range map[string]grpclimit.Option{
		"WithKey(nil)":          grpclimit.WithKey(nil),
		"WithCost(nil)":         grpclimit.WithCost(nil),
		"WithErrorHandler(nil)": grpclimit.WithErrorHandler(nil),
	} {
		if lim, err := grpclimit.New(l, opt); !errors.Is(err, algo.ErrInvalidConfig) || lim != nil {
			t.Errorf("New(l, %s) = %v, %v; want nil and an error wrapping algo.ErrInvalidConfig", name, lim, err)
		}
	}
	lim := newInterceptors(t, l, nil)
	s := startServer(t, lim, true)
	c := s.dial(t, "192.0.2.1:1000")
	want(t, "call 1 (defaults: ByPeer, cost 1)", check(t, c), ok)
	want(t, "call 2", check(t, c), outcome{codes.ResourceExhausted, time.Minute})
}

// TestUnmadeLimiter checks that a limiter not made by limiter.New, whose calls report
// algo.ErrInvalidConfig, is answered with Internal.
func TestUnmadeLimiter(t *testing.T) {
	t.Parallel()
	var handled error
	lim := newInterceptors(t, &limiter.Limiter{}, grpclimit.WithErrorHandler(
		func(ctx context.Context, m string, err error) error {
			handled = err
			return grpclimit.DefaultErrorHandler(ctx, m, err)
		}))
	s := startServer(t, lim, true)
	c := s.dial(t, "192.0.2.1:1000")
	want(t, "check", check(t, c), outcome{codes.Internal, -1})
	want(t, "watch", watch(t, c), outcome{codes.Internal, -1})
	if !errors.Is(handled, algo.ErrInvalidConfig) {
		t.Errorf("error handler got %v, want one wrapping algo.ErrInvalidConfig", handled)
	}
	if s.served() != 0 {
		t.Error("handler called with an unusable limiter")
	}
}

// TestErrorHandler checks that the error handler's answer is what the client gets, and
// that a nil answer serves the call.
func TestErrorHandler(t *testing.T) {
	t.Parallel()
	l, _, _ := newLimiter(t, algo.FixedWindow{Limit: 1, Window: time.Minute})
	lim := newInterceptors(t, l,
		grpclimit.WithKey(byMetadata(t, "tenant")),
		grpclimit.WithErrorHandler(func(_ context.Context, m string, err error) error {
			if m == checkMethod {
				return nil // serve anonymous health checks
			}
			return status.Error(codes.Unauthenticated, "no tenant")
		}))
	s := startServer(t, lim, true)
	c := s.dial(t, "192.0.2.1:1000")
	want(t, "check without tenant", check(t, c), ok)
	want(t, "check without tenant again", check(t, c), ok)
	err := watch(t, c)
	want(t, "watch without tenant", err, outcome{codes.Unauthenticated, -1})
	if got, w := status.Convert(err).Message(), "no tenant"; got != w {
		t.Errorf("message %q, want %q", got, w)
	}
}

// TestDefaultErrorHandler checks the code for each kind of error, and that the message
// never carries the error's text.
func TestDefaultErrorHandler(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err  error
		code codes.Code
	}{
		{httplimit.ErrMissingKey, codes.InvalidArgument},
		{httplimit.ErrInvalidAddress, codes.Internal},
		{store.ErrUnavailable, codes.Unavailable},
		{store.ErrClosed, codes.Unavailable},
		{context.Canceled, codes.Canceled},
		{context.DeadlineExceeded, codes.DeadlineExceeded},
		{algo.ErrInvalidConfig, codes.Internal},
		{algo.ErrInvalidRequest, codes.Internal},
		{errors.New("secret-key-42"), codes.Internal},
	} {
		st := status.Convert(grpclimit.DefaultErrorHandler(t.Context(), checkMethod, tc.err))
		if st.Code() != tc.code {
			t.Errorf("%v: code %v, want %v", tc.err, st.Code(), tc.code)
		}
		if msg := st.Message(); msg == "" || msg == tc.err.Error() || contains(msg, "secret") {
			t.Errorf("%v: message %q", tc.err, msg)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestZeroInterceptors checks that the interceptors of an Interceptors not made by New
// answer Internal instead of panicking.
func TestZeroInterceptors(t *testing.T) {
	t.Parallel()
	for _, lim := range []*grpclimit.Interceptors{nil, {}} {
		s := startServer(t, lim, true)
		c := s.dial(t, "192.0.2.1:1000")
		want(t, "check", check(t, c), outcome{codes.Internal, -1})
		want(t, "watch", watch(t, c), outcome{codes.Internal, -1})
		if s.served() != 0 {
			t.Error("handler called through unmade interceptors")
		}
	}
}
