package httplimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/adaptive"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/local"
)

// printLines serves req through h and prints the status and every rate-limit field line,
// as a client receives them.
func printLines(h http.Handler, req *http.Request) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	fmt.Println(rec.Code)
	for _, name := range []string{"RateLimit-Policy", "RateLimit", "Retry-After", "Content-Type"} {
		for _, v := range rec.Result().Header.Values(name) {
			fmt.Printf("%s: %s\n", name, v)
		}
	}
	if rec.Code == http.StatusTooManyRequests {
		fmt.Println(strings.TrimSpace(rec.Body.String()))
	}
}

// A composite limit (3 a second AND 1000 a day) sends one item per rule: the day is named
// with algo.Named, the second gets a name derived from the rule. The fourth request within
// a second is denied by the per-second rule alone; the problem document names it, and the
// daily item's t is cut to Retry-After.
func ExampleMiddleware_composite() {
	clk := exampleClock()
	st, err := local.New(local.WithClock(clk))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	perSecond, _ := limiter.New(st, algo.FixedWindow{Limit: 3, Window: time.Second}, limiter.WithClock(clk))
	perDay, _ := limiter.New(st, algo.Named(algo.FixedWindow{Limit: 1000, Window: 24 * time.Hour}, "daily"), limiter.WithClock(clk))
	api, err := limiter.All(perSecond, perDay)
	if err != nil {
		fmt.Println(err)
		return
	}
	h := perIP(api, httplimit.WithProblemDetails())(hello)
	for i := 1; i <= 4; i++ {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = "192.0.2.1:1234"
		if i == 1 || i == 4 {
			printLines(h, req)
		} else {
			h.ServeHTTP(httptest.NewRecorder(), req)
		}
	}
	// Output:
	// 200
	// RateLimit-Policy: "fw-3-1s";q=3;w=1
	// RateLimit-Policy: "daily";q=1000;w=86400
	// RateLimit: "fw-3-1s";r=2;t=1
	// RateLimit: "daily";r=999;t=86357
	// Content-Type: text/plain; charset=utf-8
	// 429
	// RateLimit-Policy: "fw-3-1s";q=3;w=1
	// RateLimit-Policy: "daily";q=1000;w=86400
	// RateLimit: "fw-3-1s";r=0;t=1
	// RateLimit: "daily";r=997;t=1
	// Retry-After: 1
	// Content-Type: application/problem+json
	// {"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"violated-policies":["fw-3-1s"]}
}

// An upload quota in bytes: 1 MiB a minute per client, a request costing its size. The
// unit is sent as qu, and pk identifies the client's partition without revealing its
// address (an HMAC of the key under a server secret).
func ExampleWithQuotaUnit() {
	l, _, done := exampleLimiter(algo.FixedWindow{Limit: 1 << 20, Window: time.Minute})
	defer done()
	size := func(r *http.Request) int64 { return max(r.ContentLength, 1) }
	h := perIP(l,
		httplimit.WithCost(size),
		httplimit.WithQuotaUnit("content-bytes"),
		httplimit.WithPartitionKey([]byte("a server secret, 16 bytes or more")),
	)(hello)
	req := httptest.NewRequest(http.MethodPost, "/upload", strings.NewReader(strings.Repeat("x", 4096)))
	req.RemoteAddr = "192.0.2.1:1234"
	printLines(h, req)
	// Output:
	// 200
	// RateLimit-Policy: "default";q=1048576;qu="content-bytes";w=60;pk=:F35Tv0TxBwDq2t4mqr2ZBA==:
	// RateLimit: "default";r=1044480;t=17;pk=:F35Tv0TxBwDq2t4mqr2ZBA==:
	// Content-Type: text/plain; charset=utf-8
}

// The concurrency middleware advertises its limit in "concurrent-requests": q is the
// limit, r the places left once this request is admitted.
func ExampleConcurrency_headers() {
	l, err := adaptive.New(adaptive.Fixed{Limit: 40})
	if err != nil {
		fmt.Println(err)
		return
	}
	mw, err := httplimit.Concurrency(l)
	if err != nil {
		fmt.Println(err)
		return
	}
	printLines(mw(hello), httptest.NewRequest(http.MethodGet, "/", nil))
	// Output:
	// 200
	// RateLimit-Policy: "concurrency";q=40;qu="concurrent-requests"
	// RateLimit: "concurrency";r=39
	// Content-Type: text/plain; charset=utf-8
}
