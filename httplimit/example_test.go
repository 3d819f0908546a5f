package httplimit_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/local"
)

// The examples run on a fake clock, 43 s into a minute, so their output is exact; in
// production leave out the WithClock options and time is real.
func exampleClock() *clockx.Fake {
	return clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 43, 0, time.UTC))
}

// exampleLimiter returns a limiter on a local store and the fake clock both run on.
func exampleLimiter(a algo.Algorithm) (*limiter.Limiter, *clockx.Fake, func()) {
	clk := exampleClock()
	st, err := local.New(local.WithClock(clk))
	if err != nil {
		panic(err) // a fixed, valid config
	}
	l, err := limiter.New(st, a, limiter.WithClock(clk))
	if err != nil {
		panic(err) // a fixed, valid config
	}
	return l, clk, func() { _ = st.Close() }
}

// perIP returns Middleware(l, ByIP(), opts...) for the examples of options, whose
// configurations are fixed and valid; Example shows the error handling.
func perIP(l *limiter.Limiter, opts ...httplimit.Option) func(http.Handler) http.Handler {
	key, err := httplimit.ByIP()
	if err != nil {
		panic(err)
	}
	mw, err := httplimit.Middleware(l, key, opts...)
	if err != nil {
		panic(err)
	}
	return mw
}

var hello = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
	fmt.Fprintln(w, "hello")
})

// send serves one request from remote through h and prints the status and the rate-limit
// headers present.
func send(h http.Handler, remote string, header ...string) {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.RemoteAddr = remote
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	fmt.Print(rec.Code)
	for _, name := range []string{"RateLimit-Policy", "RateLimit", "Retry-After"} {
		if v := rec.Header().Get(name); v != "" {
			fmt.Printf(" | %s: %s", name, v)
		}
	}
	fmt.Println()
}

func Example() {
	// 2 requests per minute per client IP.
	l, _, done := exampleLimiter(algo.FixedWindow{Limit: 2, Window: time.Minute})
	defer done()
	key, err := httplimit.ByIP()
	if err != nil {
		fmt.Println(err)
		return
	}
	mw, err := httplimit.Middleware(l, key)
	if err != nil {
		fmt.Println(err) // a nil limiter or KeyFunc, an invalid option
		return
	}
	h := mw(hello)

	send(h, "192.0.2.1:51000")
	send(h, "192.0.2.1:51001")
	send(h, "192.0.2.1:51002") // over the limit until the minute ends, 17 s from now
	send(h, "198.51.100.7:443")
	// Output:
	// 200 | RateLimit-Policy: "default";q=2;w=60 | RateLimit: "default";r=1;t=17
	// 200 | RateLimit-Policy: "default";q=2;w=60 | RateLimit: "default";r=0;t=17
	// 429 | RateLimit-Policy: "default";q=2;w=60 | RateLimit: "default";r=0;t=17 | Retry-After: 17
	// 200 | RateLimit-Policy: "default";q=2;w=60 | RateLimit: "default";r=1;t=17
}

// Under FailOpen, requests are served while the store is down; under the default,
// FailClosed, they get 503.
func ExampleMiddleware_storeDown() {
	down := &failingStore{} // a store.Store whose calls all fail with store.ErrUnavailable
	open, _ := limiter.New(down, algo.TokenBucket{Rate: 10, Burst: 10},
		limiter.WithFailurePolicy(limiter.FailOpen))
	closed, _ := limiter.New(down, algo.TokenBucket{Rate: 10, Burst: 10})

	send(perIP(open)(hello), "192.0.2.1:1")
	send(perIP(closed)(hello), "192.0.2.1:1")
	// Output:
	// 200
	// 503
}

func ExampleByIP() {
	// Behind a load balancer in 10.0.0.0/8 that appends the address it sees to
	// X-Forwarded-For.
	key, err := httplimit.ByIP(httplimit.TrustedProxies("10.0.0.0/8"))
	if err != nil {
		fmt.Println(err) // a proxy that does not parse as an address or CIDR prefix
		return
	}
	show := func(remote, xff string) {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = remote
		if xff != "" {
			req.Header.Set("X-Forwarded-For", xff)
		}
		k, err := key(req)
		fmt.Printf("%-18s %-28q -> %s %v\n", remote, xff, k, err)
	}
	show("10.0.0.2:5000", "198.51.100.7")            // through the balancer
	show("10.0.0.2:5000", "6.6.6.6, 198.51.100.7")   // the client tried to pick its key
	show("203.0.113.9:5000", "198.51.100.7")         // straight from the internet: header ignored
	show("[2001:DB8::0:1]:443", "")                  // IPv6: its /64
	show("10.0.0.2:5000", "198.51.100.7, 10.0.0.33") // two balancers
	// Output:
	// 10.0.0.2:5000      "198.51.100.7"               -> 198.51.100.7 <nil>
	// 10.0.0.2:5000      "6.6.6.6, 198.51.100.7"      -> 198.51.100.7 <nil>
	// 203.0.113.9:5000   "198.51.100.7"               -> 203.0.113.9 <nil>
	// [2001:DB8::0:1]:443 ""                           -> 2001:db8::/64 <nil>
	// 10.0.0.2:5000      "198.51.100.7, 10.0.0.33"    -> 198.51.100.7 <nil>
}

func ExampleIPv6Prefix() {
	for _, bits := range []int{64, 56, 128} { // 64 is the default
		key, err := httplimit.ByIP(httplimit.IPv6Prefix(bits))
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, remote := range []string{"[2001:db8:1:2::10]:443", "[2001:db8:1:2:aaaa::1]:443", "192.0.2.1:80"} {
			req := httptest.NewRequest(http.MethodGet, "/", nil)
			req.RemoteAddr = remote
			k, _ := key(req)
			fmt.Printf("/%d %s\n", bits, k)
		}
	}
	// Output:
	// /64 2001:db8:1:2::/64
	// /64 2001:db8:1:2::/64
	// /64 192.0.2.1
	// /56 2001:db8:1::/56
	// /56 2001:db8:1::/56
	// /56 192.0.2.1
	// /128 2001:db8:1:2::10
	// /128 2001:db8:1:2:aaaa::1
	// /128 192.0.2.1
}

func ExampleByHeader() {
	l, _, done := exampleLimiter(algo.TokenBucket{Rate: 1, Burst: 5})
	defer done()
	key, err := httplimit.ByHeader("X-API-Key")
	if err != nil {
		fmt.Println(err) // not a header field name
		return
	}
	mw, err := httplimit.Middleware(l, key, httplimit.WithPolicyName("per-key"))
	if err != nil {
		fmt.Println(err)
		return
	}
	h := mw(hello)

	send(h, "192.0.2.1:1", "X-API-Key", "k-123")
	send(h, "192.0.2.1:1") // no key: the client's mistake
	// Output:
	// 200 | RateLimit-Policy: "per-key";q=5;w=5 | RateLimit: "per-key";r=4;t=1
	// 400
}

func ExampleWithWait() {
	// One request per second, bursts of one: the second request of a burst is delayed by
	// up to 2 s instead of rejected.
	l, clk, done := exampleLimiter(algo.GCRA{Rate: 1, Burst: 1})
	defer done()
	start := clk.Now()
	h := perIP(l, httplimit.WithWait(2*time.Second))(
		http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Printf("served after %v: ", clk.Now().Sub(start))
		}))
	send(h, "192.0.2.1:1")
	send(h, "192.0.2.1:1")
	send(h, "192.0.2.1:1")
	// Output:
	// served after 0s: 200 | RateLimit-Policy: "default";q=1;w=1 | RateLimit: "default";r=0;t=1
	// served after 1s: 200 | RateLimit-Policy: "default";q=1;w=1 | RateLimit: "default";r=0;t=1
	// served after 2s: 200 | RateLimit-Policy: "default";q=1;w=1 | RateLimit: "default";r=0;t=1
}

func ExampleWithCost() {
	// 100 units per minute; a search costs 10, everything else 1, health checks nothing.
	l, _, done := exampleLimiter(algo.SlidingWindowLog{Limit: 100, Window: time.Minute})
	defer done()
	cost := func(r *http.Request) int64 {
		switch r.URL.Path {
		case "/search":
			return 10
		case "/healthz":
			return 0
		default:
			return 1
		}
	}
	h := perIP(l, httplimit.WithCost(cost))(hello)
	for _, path := range []string{"/search", "/item", "/healthz"} {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.RemoteAddr = "192.0.2.1:1"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Printf("%-8s %d %s\n", path, rec.Code, rec.Header().Get("RateLimit"))
	}
	// Output:
	// /search  200 "default";r=90;t=60
	// /item    200 "default";r=89;t=60
	// /healthz 200
}

func ExampleWithDeniedHandler() {
	l, _, done := exampleLimiter(algo.FixedWindow{Limit: 1, Window: time.Minute})
	defer done()
	problem := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		// Retry-After and the RateLimit headers are already set.
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprintf(w, `{"title":"Too Many Requests","retry_after":%s}`, w.Header().Get("Retry-After"))
	})
	h := perIP(l, httplimit.WithDeniedHandler(problem))(hello)
	for i := 0; i < 2; i++ {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.RemoteAddr = "192.0.2.1:1"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		fmt.Print(rec.Code, " ", rec.Body.String())
	}
	fmt.Println()
	// Output:
	// 200 hello
	// 429 {"title":"Too Many Requests","retry_after":17}
}
