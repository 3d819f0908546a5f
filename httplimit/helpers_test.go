package httplimit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// epoch is a whole minute, so FixedWindow boundaries (aligned to the Unix epoch) fall on
// whole minutes of the fake clock.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newLimiter returns a limiter over a fresh local store, both on one fake clock that
// reads start.
func newLimiter(tb testing.TB, a algo.Algorithm, start time.Time, opts ...limiter.Option) (*limiter.Limiter, *clockx.Fake) {
	tb.Helper()
	clk := clockx.NewFake(start)
	st := teststore.Local(tb, local.WithClock(clk), local.WithSweepInterval(0))
	tb.Cleanup(func() { _ = st.Close() })
	l, err := limiter.New(st, a, append([]limiter.Option{limiter.WithClock(clk)}, opts...)...)
	if err != nil {
		tb.Fatalf("limiter.New: %v", err)
	}
	return l, clk
}

// counter is a next handler that counts its calls and answers 200 "ok".
type counter struct{ n atomic.Int64 }

func (c *counter) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	c.n.Add(1)
	_, _ = w.Write([]byte("ok"))
}

func (c *counter) calls() int64 { return c.n.Load() }

// get serves a GET from remote (an "ip:port") through h.
func get(h http.Handler, remote string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = remote
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// response is what a test checks of a recorded response: the status and the rate-limit
// headers ("" when absent).
type response struct {
	code       int
	policy     string
	rateLimit  string
	retryAfter string
}

func (r response) String() string {
	return fmt.Sprintf("%d policy=%q ratelimit=%q retry-after=%q", r.code, r.policy, r.rateLimit, r.retryAfter)
}

func summary(rec *httptest.ResponseRecorder) response {
	h := rec.Result().Header
	return response{
		code:       rec.Code,
		policy:     h.Get("RateLimit-Policy"),
		rateLimit:  h.Get("RateLimit"),
		retryAfter: h.Get("Retry-After"),
	}
}

func checkResponse(tb testing.TB, label string, rec *httptest.ResponseRecorder, want response) {
	tb.Helper()
	if got := summary(rec); got != want {
		tb.Errorf("%s:\n got %v\nwant %v", label, got, want)
	}
}

// failingStore is a store.Store whose backend is down: every call fails with an error
// wrapping store.ErrUnavailable.
type failingStore struct{ calls atomic.Int64 }

var _ store.Store = (*failingStore)(nil)

func (s *failingStore) Apply(context.Context, string, algo.Algorithm, algo.Request) (algo.Decision, error) {
	s.calls.Add(1)
	return algo.Decision{}, fmt.Errorf("%w: connection refused", store.ErrUnavailable)
}

func (s *failingStore) Refund(context.Context, string, algo.Algorithm, int64, int64) error {
	return fmt.Errorf("%w: connection refused", store.ErrUnavailable)
}

func (s *failingStore) Close() error { return nil }

// mustMiddleware returns httplimit.Middleware(l, key, opts...), failing the test if it
// returns an error.
func mustMiddleware(tb testing.TB, l *limiter.Limiter, key httplimit.KeyFunc, opts ...httplimit.Option) func(http.Handler) http.Handler {
	tb.Helper()
	mw, err := httplimit.Middleware(l, key, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return mw
}

// mustByIP returns httplimit.ByIP(opts...), failing the test if it returns an error.
func mustByIP(tb testing.TB, opts ...httplimit.IPOption) httplimit.KeyFunc {
	tb.Helper()
	key, err := httplimit.ByIP(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

// mustByHeader returns httplimit.ByHeader(name), failing the test if it returns an error.
func mustByHeader(tb testing.TB, name string) httplimit.KeyFunc {
	tb.Helper()
	key, err := httplimit.ByHeader(name)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}
