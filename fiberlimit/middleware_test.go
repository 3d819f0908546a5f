package fiberlimit_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/gofiber/fiber/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/fiberlimit"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/internal/adaptertest"
)

// mount is adaptertest.Mount for Fiber: an app with the middleware, the counting
// middleware after it, and GET / and POST /, served through app.Test.
func mount(tb testing.TB, l *limiter.Limiter, key httplimit.KeyFunc, opts []httplimit.Option, n *adaptertest.Counts) (http.Handler, error) {
	mw, err := fiberlimit.Middleware(l, key, opts...)
	if err != nil {
		return nil, err
	}
	app := fiber.New()
	app.Use(mw, func(c *fiber.Ctx) error { n.After.Add(1); return c.Next() })
	ok := func(c *fiber.Ctx) error {
		n.Handler.Add(1)
		status, usage := adaptertest.Answer(func(name string) string { return c.Get(name) })
		if usage != "" {
			c.Set("X-Usage-Tokens", usage)
		}
		return c.Status(status).SendString("ok")
	}
	app.Get("/", ok)
	app.Post("/", ok)
	return serve(tb, app), nil
}

// serve is app as an http.Handler: it passes each request to app.Test and copies the
// response (every value of every header, the status, the body) to w. The suite calls it
// on tb's goroutine, so a failure of app.Test can stop tb.
func serve(tb testing.TB, app *fiber.App) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := app.Test(r, -1)
		if err != nil {
			tb.Fatal(err)
		}
		defer resp.Body.Close()
		for k, vs := range resp.Header {
			for _, v := range vs {
				w.Header().Add(k, v)
			}
		}
		w.WriteHeader(resp.StatusCode)
		if _, err := io.Copy(w, resp.Body); err != nil {
			tb.Fatal(err)
		}
	})
}

// app.Test's connection always comes from 0.0.0.0, so the suite trusts it as a proxy and
// names the client in X-Forwarded-For.
func TestMiddleware(t *testing.T) {
	t.Parallel()
	adaptertest.Run(t, adaptertest.Adapter{Mount: mount, Proxy: "0.0.0.0"})
}

// BenchmarkMiddleware: what a request through the middleware costs (adaptertest.Benchmark).
func BenchmarkMiddleware(b *testing.B) {
	adaptertest.Benchmark(b, adaptertest.Adapter{Mount: mount})
}

// TestChargeAfterError: for a handler that returned an error, which Fiber answers after
// the middleware, WithChargeAfter gets the status Fiber's error handler sends for it and
// the header the handler set.
func TestChargeAfterError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		err    error
		status int
	}{
		{fiber.NewError(fiber.StatusBadGateway, "upstream"), fiber.StatusBadGateway},
		{errors.New("plain"), fiber.StatusInternalServerError},
	} {
		l, _ := adaptertest.NewLimiter(t, algo.TokenBucket{Rate: 1, Burst: 10})
		key := func(*http.Request) (string, error) { return "k", nil }
		var status int
		var usage string
		mw, err := fiberlimit.Middleware(l, key, httplimit.WithChargeAfter(func(_ *http.Request, s int, h http.Header) int64 {
			status, usage = s, h.Get("X-Usage-Tokens")
			return 0
		}))
		require.NoError(t, err)
		app := fiber.New()
		app.Use(mw)
		app.Get("/fail", func(c *fiber.Ctx) error {
			c.Set("X-Usage-Tokens", "7")
			return tc.err
		})
		resp, err := app.Test(httptest.NewRequest(http.MethodGet, "/fail", nil), -1)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, tc.status, resp.StatusCode, "%v: Fiber's answer", tc.err)
		assert.Equal(t, tc.status, status, "%v: the status the charge saw", tc.err)
		assert.Equal(t, "7", usage, "%v", tc.err)
	}
}
