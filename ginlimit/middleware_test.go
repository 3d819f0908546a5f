package ginlimit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/ginlimit"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

func init() { gin.SetMode(gin.TestMode) }

// epoch is a whole minute, so FixedWindow boundaries fall on whole minutes.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newLimiter returns a limiter over a fresh local store, both on one fake clock at epoch.
func newLimiter(tb testing.TB, a algo.Algorithm) (*limiter.Limiter, *clockx.Fake) {
	tb.Helper()
	clk := clockx.NewFake(epoch)
	st, err := local.New(local.WithClock(clk), local.WithSweepInterval(0))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	l, err := limiter.New(st, a, limiter.WithClock(clk))
	if err != nil {
		tb.Fatal(err)
	}
	return l, clk
}

// engine is a gin engine with mw in front of GET / and POST /, whose handler counts its
// calls, and a middleware after mw that records whether the chain went on.
type engine struct {
	*gin.Engine
	calls, after atomic.Int64
}

func newEngine(tb testing.TB, l *limiter.Limiter, key httplimit.KeyFunc, opts ...httplimit.Option) *engine {
	tb.Helper()
	mw, err := ginlimit.Middleware(l, key, opts...)
	if err != nil {
		tb.Fatal(err)
	}
	e := &engine{Engine: gin.New()}
	e.Use(mw, func(c *gin.Context) { e.after.Add(1); c.Next() })
	ok := func(c *gin.Context) { e.calls.Add(1); c.String(http.StatusOK, "ok") }
	e.GET("/", ok)
	e.POST("/", ok)
	return e
}

// do serves a request from remote through e, with header pairs.
func (e *engine) do(method, remote string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "/", nil)
	req.RemoteAddr = remote
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	return rec
}

func describe(rec *httptest.ResponseRecorder) string {
	h := rec.Result().Header
	return fmt.Sprintf("%d %q policy=%q ratelimit=%q retry-after=%q", rec.Code, rec.Body.String(),
		h.Get("RateLimit-Policy"), h.Get("RateLimit"), h.Get("Retry-After"))
}

func check(t *testing.T, label string, rec *httptest.ResponseRecorder, want string) {
	t.Helper()
	if got := describe(rec); got != want {
		t.Errorf("%s:\n got %s\nwant %s", label, got, want)
	}
}

func mustByIP(tb testing.TB) httplimit.KeyFunc {
	key, err := httplimit.ByIP()
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

func TestAllowedAndDenied(t *testing.T) {
	t.Parallel()
	l, _ := newLimiter(t, algo.FixedWindow{Limit: 2, Window: time.Minute})
	e := newEngine(t, l, mustByIP(t))
	check(t, "1", e.do("GET", "192.0.2.1:1"), `200 "ok" policy="\"default\";q=2;w=60" ratelimit="\"default\";r=1;t=60" retry-after=""`)
	check(t, "2", e.do("GET", "192.0.2.1:2"), `200 "ok" policy="\"default\";q=2;w=60" ratelimit="\"default\";r=0;t=60" retry-after=""`)
	check(t, "3", e.do("GET", "192.0.2.1:3"), `429 "Too Many Requests\n" policy="\"default\";q=2;w=60" ratelimit="\"default\";r=0;t=60" retry-after="60"`)
	// Another address is another key.
	check(t, "other ip", e.do("GET", "[2001:db8::1]:1"), `200 "ok" policy="\"default\";q=2;w=60" ratelimit="\"default\";r=1;t=60" retry-after=""`)
	if c, a := e.calls.Load(), e.after.Load(); c != 3 || a != 3 {
		t.Errorf("handler ran %d times, the next middleware %d; want 3 and 3 (the chain is aborted on 429)", c, a)
	}
}

func TestByHeaderAndProblemDetails(t *testing.T) {
	t.Parallel()
	l, _ := newLimiter(t, algo.FixedWindow{Limit: 1, Window: time.Minute})
	key, err := httplimit.ByHeader("X-API-Key")
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, l, key, httplimit.WithProblemDetails())
	check(t, "a", e.do("GET", "192.0.2.1:1", "X-API-Key", "a"), `200 "ok" policy="\"default\";q=1;w=60" ratelimit="\"default\";r=0;t=60" retry-after=""`)
	check(t, "b", e.do("GET", "192.0.2.1:1", "X-API-Key", "b"), `200 "ok" policy="\"default\";q=1;w=60" ratelimit="\"default\";r=0;t=60" retry-after=""`)
	rec := e.do("GET", "192.0.2.1:1", "X-API-Key", "a")
	check(t, "a again", rec, `429 "{\"type\":\"https://iana.org/assignments/http-problem-types#quota-exceeded\",\"title\":\"Too Many Requests\",\"status\":429,\"violated-policies\":[\"default\"]}" policy="\"default\";q=1;w=60" ratelimit="\"default\";r=0;t=60" retry-after="60"`)
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type = %q", ct)
	}
	check(t, "no key", e.do("GET", "192.0.2.1:1"), `400 "Bad Request\n" policy="" ratelimit="" retry-after=""`)
}

func TestCost(t *testing.T) {
	t.Parallel()
	l, _ := newLimiter(t, algo.FixedWindow{Limit: 10, Window: time.Minute})
	cost := func(r *http.Request) int64 {
		if r.Method == http.MethodPost {
			return 4
		}
		return 0 // exempt
	}
	e := newEngine(t, l, mustByIP(t), httplimit.WithCost(cost))
	check(t, "post", e.do("POST", "192.0.2.1:1"), `200 "ok" policy="\"default\";q=10;w=60" ratelimit="\"default\";r=6;t=60" retry-after=""`)
	check(t, "get (cost 0)", e.do("GET", "192.0.2.1:1"), `200 "ok" policy="" ratelimit="" retry-after=""`)
	e.do("POST", "192.0.2.1:1")
	check(t, "third post", e.do("POST", "192.0.2.1:1"), `429 "Too Many Requests\n" policy="\"default\";q=10;w=60" ratelimit="\"default\";r=2;t=60" retry-after="60"`)
}

// downStore is a store whose backend is down.
type downStore struct{}

func (downStore) Apply(context.Context, string, algo.Algorithm, algo.Request) (algo.Decision, error) {
	return algo.Decision{}, fmt.Errorf("%w: connection refused", store.ErrUnavailable)
}
func (downStore) Refund(context.Context, string, algo.Algorithm, int64, int64) error {
	return fmt.Errorf("%w: connection refused", store.ErrUnavailable)
}
func (downStore) Close() error { return nil }

func TestFailurePolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy limiter.FailurePolicy
		want   string
	}{
		{limiter.FailOpen, `200 "ok" policy="" ratelimit="" retry-after=""`},
		{limiter.FailClosed, `503 "Service Unavailable\n" policy="" ratelimit="" retry-after=""`},
	} {
		l, err := limiter.New(downStore{}, algo.TokenBucket{Rate: 1, Burst: 1}, limiter.WithFailurePolicy(tc.policy))
		if err != nil {
			t.Fatal(err)
		}
		check(t, tc.policy.String(), newEngine(t, l, mustByIP(t)).do("GET", "192.0.2.1:1"), tc.want)
	}
}

func TestWait(t *testing.T) {
	t.Parallel()
	l, clk := newLimiter(t, algo.TokenBucket{Rate: 1, Burst: 1})
	e := newEngine(t, l, mustByIP(t), httplimit.WithWait(2*time.Second))
	check(t, "1", e.do("GET", "192.0.2.1:1"), `200 "ok" policy="\"default\";q=1;w=1" ratelimit="\"default\";r=0;t=1" retry-after=""`)
	// The next token comes in 1 s, within the bound: the request waits (on the fake
	// clock) and is served.
	check(t, "2", e.do("GET", "192.0.2.1:1"), `200 "ok" policy="\"default\";q=1;w=1" ratelimit="\"default\";r=0;t=1" retry-after=""`)
	if got := clk.Now().Sub(epoch); got != time.Second {
		t.Errorf("waited %v, want 1s", got)
	}
}

func TestInvalidConfig(t *testing.T) {
	t.Parallel()
	if _, err := ginlimit.Middleware(nil, mustByIP(t)); !errors.Is(err, algo.ErrInvalidConfig) {
		t.Errorf("nil limiter: %v, want ErrInvalidConfig", err)
	}
}
