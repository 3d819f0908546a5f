package echolimit_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/echolimit"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/internal/adaptertest"
)

// newEcho is an Echo instance with the middleware, a middleware after it that counts its
// calls in n.After, and GET / and POST / that count theirs in n.Handler.
func newEcho(l *limiter.Limiter, key httplimit.KeyFunc, opts []httplimit.Option, n *adaptertest.Counts) (*echo.Echo, error) {
	mw, err := echolimit.Middleware(l, key, opts...)
	if err != nil {
		return nil, err
	}
	e := echo.New()
	e.Use(mw, func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error { n.After.Add(1); return next(c) }
	})
	ok := func(c echo.Context) error {
		n.Handler.Add(1)
		status, usage := adaptertest.Answer(c.Request().Header.Get)
		if usage != "" {
			c.Response().Header().Set("X-Usage-Tokens", usage)
		}
		return c.String(status, "ok")
	}
	e.GET("/", ok)
	e.POST("/", ok)
	return e, nil
}

func TestMiddleware(t *testing.T) {
	t.Parallel()
	adaptertest.Run(t, adaptertest.Adapter{
		Flushes: true,
		Mount: func(_ testing.TB, l *limiter.Limiter, key httplimit.KeyFunc, opts []httplimit.Option, n *adaptertest.Counts) (http.Handler, error) {
			return newEcho(l, key, opts, n)
		},
	})
}

// An error of the next handler reaches Echo's error handler, with the headers set.
func TestNextError(t *testing.T) {
	t.Parallel()
	l, _ := adaptertest.NewLimiter(t, algo.FixedWindow{Limit: 2, Window: time.Minute})
	key, err := httplimit.ByIP()
	if err != nil {
		t.Fatal(err)
	}
	e, err := newEcho(l, key, nil, new(adaptertest.Counts))
	if err != nil {
		t.Fatal(err)
	}
	e.GET("/teapot", func(echo.Context) error { return echo.NewHTTPError(http.StatusTeapot, "short and stout") })
	req := httptest.NewRequest(http.MethodGet, "/teapot", nil)
	req.RemoteAddr = "192.0.2.1:1"
	rec := httptest.NewRecorder()
	e.ServeHTTP(rec, req)
	if rec.Code != http.StatusTeapot || rec.Header().Get("RateLimit") != `"default";r=1;t=60` {
		t.Errorf("got %s, want 418 with the RateLimit headers", adaptertest.Describe(rec))
	}
}

// BenchmarkMiddleware: what a request through the middleware costs (adaptertest.Benchmark).
func BenchmarkMiddleware(b *testing.B) {
	adaptertest.Benchmark(b, adaptertest.Adapter{
		Mount: func(_ testing.TB, l *limiter.Limiter, key httplimit.KeyFunc, opts []httplimit.Option, n *adaptertest.Counts) (http.Handler, error) {
			return newEcho(l, key, opts, n)
		},
	})
}

// TestChargeAfterError: for a handler that returned an error, which Echo answers after the
// middleware, WithChargeAfter gets the status Echo's error handler sends for it and the
// header the handler set.
func TestChargeAfterError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err    error
		status int
	}{
		{echo.NewHTTPError(http.StatusBadGateway, "upstream"), http.StatusBadGateway},
		{errors.New("plain"), http.StatusInternalServerError},
	} {
		l, _ := adaptertest.NewLimiter(t, algo.TokenBucket{Rate: 1, Burst: 10})
		key := func(*http.Request) (string, error) { return "k", nil }
		var status int
		var usage string
		e, err := newEcho(l, key, []httplimit.Option{httplimit.WithChargeAfter(func(_ *http.Request, s int, h http.Header) int64 {
			status, usage = s, h.Get("X-Usage-Tokens")
			return 0
		})}, new(adaptertest.Counts))
		require.NoError(t, err)
		e.GET("/fail", func(c echo.Context) error {
			c.Response().Header().Set("X-Usage-Tokens", "7")
			return tc.err
		})
		rec := httptest.NewRecorder()
		e.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/fail", nil))
		assert.Equal(t, tc.status, rec.Code, "%v: Echo's answer", tc.err)
		assert.Equal(t, tc.status, status, "%v: the status the charge saw", tc.err)
		assert.Equal(t, "7", usage, "%v", tc.err)
	}
}
