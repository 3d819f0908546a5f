package fiberlimit_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/ratekit/limiter"
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
	ok := func(c *fiber.Ctx) error { n.Handler.Add(1); return c.SendString("ok") }
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
