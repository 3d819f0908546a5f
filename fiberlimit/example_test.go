package fiberlimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/fiberlimit"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/local"
)

// Two requests an hour per client, keyed by an API key header, in front of a Fiber route. (The fake clock keeps
// the output the same whenever it runs; leave it out in a server.)
func ExampleMiddleware() {
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st, err := local.New(local.WithClock(clk))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	l, err := limiter.New(st, algo.FixedWindow{Limit: 2, Window: time.Hour})
	if err != nil {
		fmt.Println(err)
		return
	}
	key, err := httplimit.ByHeader("X-API-Key")
	if err != nil {
		fmt.Println(err)
		return
	}
	mw, err := fiberlimit.Middleware(l, key)
	if err != nil {
		fmt.Println(err)
		return
	}
	app := fiber.New()
	app.Use(mw)
	app.Get("/hello", func(c *fiber.Ctx) error { return c.SendString("hello") })

	for range 3 {
		req := httptest.NewRequest(http.MethodGet, "/hello", nil)
		req.Header.Set("X-API-Key", "k-42")
		resp, err := app.Test(req, -1)
		if err != nil {
			fmt.Println(err)
			return
		}
		resp.Body.Close()
		fmt.Println(resp.StatusCode, resp.Header.Get("RateLimit-Policy"))
	}
	// Output:
	// 200 "default";q=2;w=3600
	// 200 "default";q=2;w=3600
	// 429 "default";q=2;w=3600
}
