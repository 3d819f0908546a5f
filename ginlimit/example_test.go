package ginlimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/ginlimit"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/local"
)

// Two requests an hour per client address, in front of a gin route. (The fake clock keeps
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
	key, err := httplimit.ByIP()
	if err != nil {
		fmt.Println(err)
		return
	}
	mw, err := ginlimit.Middleware(l, key)
	if err != nil {
		fmt.Println(err)
		return
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(mw)
	r.GET("/hello", func(c *gin.Context) { c.String(http.StatusOK, "hello") })

	for range 3 {
		req := httptest.NewRequest(http.MethodGet, "/hello", nil)
		req.RemoteAddr = "192.0.2.1:1234"
		rec := httptest.NewRecorder()
		r.ServeHTTP(rec, req)
		fmt.Println(rec.Code, rec.Header().Get("RateLimit-Policy"))
	}
	// Output:
	// 200 "default";q=2;w=3600
	// 200 "default";q=2;w=3600
	// 429 "default";q=2;w=3600
}
