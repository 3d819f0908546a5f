package echolimit_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/labstack/echo/v4"

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
	ok := func(c echo.Context) error { n.Handler.Add(1); return c.String(http.StatusOK, "ok") }
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
