package adaptertest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// Counts counts what ran behind the adapter's middleware.
type Counts struct {
	// After counts the calls of the middleware mounted after the adapter's: it tells
	// whether the chain went on.
	After atomic.Int64
	// Handler counts the calls of the route handler.
	Handler atomic.Int64
}

// Mount builds an app of the adapter's framework: the adapter's middleware for l, key
// and opts; after it a middleware that adds one to n.After and calls the next; GET / and
// POST / routes that add one to n.Handler and answer "ok" as Answer says (200, and no
// X-Usage-Tokens, unless the request asks). It returns the error of the adapter's
// constructor as it is. tb is the (sub)test the app serves.
type Mount func(tb testing.TB, l *limiter.Limiter, key httplimit.KeyFunc, opts []httplimit.Option, n *Counts) (http.Handler, error)

// Adapter is what the suite needs of one adapter.
type Adapter struct {
	Mount Mount
	// Proxy, when not empty, is the one address every request reaches the app from
	// whatever its RemoteAddr (Fiber's app.Test: "0.0.0.0"). The suite then keys by IP
	// trusting Proxy, and names the client in X-Forwarded-For.
	Proxy string
	// Flushes says that the framework's writer flushes and hijacks (http.Flusher,
	// http.Hijacker): the writer the error and denied handlers get must then too.
	Flushes bool
}

// Epoch is a whole minute, so FixedWindow boundaries fall on whole minutes.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// NewLimiter returns a limiter of a over a fresh local store, both on one fake clock at
// Epoch.
func NewLimiter(tb testing.TB, a algo.Algorithm) (*limiter.Limiter, *clockx.Fake) {
	tb.Helper()
	clk := clockx.NewFake(Epoch)
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

// Describe is the line the suite compares: status, body and the rate-limit headers.
func Describe(rec *httptest.ResponseRecorder) string {
	h := rec.Result().Header
	return fmt.Sprintf("%d %q policy=%q ratelimit=%q retry-after=%q", rec.Code, rec.Body.String(),
		h.Get("RateLimit-Policy"), h.Get("RateLimit"), h.Get("Retry-After"))
}

func check(t *testing.T, label string, rec *httptest.ResponseRecorder, want string) {
	t.Helper()
	if got := Describe(rec); got != want {
		t.Errorf("%s:\n got %s\nwant %s", label, got, want)
	}
}

// app is one mounted app and the counts of what ran behind the middleware.
type app struct {
	h     http.Handler
	n     *Counts
	proxy string
}

func (a Adapter) mount(t *testing.T, l *limiter.Limiter, key httplimit.KeyFunc, opts ...httplimit.Option) *app {
	t.Helper()
	n := new(Counts)
	h, err := a.Mount(t, l, key, opts, n)
	if err != nil {
		t.Fatal(err)
	}
	return &app{h: h, n: n, proxy: a.Proxy}
}

// byIP keys by client address; behind a.Proxy it trusts the proxy's X-Forwarded-For.
func (a Adapter) byIP(t *testing.T) httplimit.KeyFunc {
	t.Helper()
	var opts []httplimit.IPOption
	if a.Proxy != "" {
		opts = append(opts, httplimit.TrustedProxies(a.Proxy))
	}
	key, err := httplimit.ByIP(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// do serves a request from the client ip:port through the app, with header pairs. Behind
// a proxy only the ip reaches the app, in X-Forwarded-For.
func (a *app) do(method, ip, port string, header ...string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, "/", nil)
	req.RemoteAddr = net.JoinHostPort(ip, port)
	if a.proxy != "" {
		req.Header.Set("X-Forwarded-For", ip)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, req)
	return rec
}

// Run runs the suite against a, each case a parallel subtest.
func Run(t *testing.T, a Adapter) {
	for _, c := range []struct {
		name string
		run  func(*testing.T, Adapter)
	}{
		{"AllowedAndDenied", allowedAndDenied},
		{"ByHeaderAndProblemDetails", byHeaderAndProblemDetails},
		{"Cost", cost},
		{"FailurePolicy", failurePolicy},
		{"Wait", wait},
		{"CompositeLines", compositeLines},
		{"InvalidConfig", invalidConfig},
		{"HandlersGetAFlushingWriter", handlersGetAFlushingWriter},
		{"ChargeAfter", chargeAfter},
		{"ChargeError", chargeError},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, a)
		})
	}
}

func allowedAndDenied(t *testing.T, a Adapter) {
	l, _ := NewLimiter(t, algo.FixedWindow{Limit: 2, Window: time.Minute})
	e := a.mount(t, l, a.byIP(t))
	check(t, "1", e.do("GET", "192.0.2.1", "1"), `200 "ok" policy="\"default\";q=2;w=60" ratelimit="\"default\";r=1;t=60" retry-after=""`)
	check(t, "2", e.do("GET", "192.0.2.1", "2"), `200 "ok" policy="\"default\";q=2;w=60" ratelimit="\"default\";r=0;t=60" retry-after=""`)
	check(t, "3", e.do("GET", "192.0.2.1", "3"), `429 "Too Many Requests\n" policy="\"default\";q=2;w=60" ratelimit="\"default\";r=0;t=60" retry-after="60"`)
	// Another address is another key; an IPv6 client is keyed by its /64.
	check(t, "other ip", e.do("GET", "2001:db8::1", "1"), `200 "ok" policy="\"default\";q=2;w=60" ratelimit="\"default\";r=1;t=60" retry-after=""`)
	check(t, "same /64", e.do("GET", "2001:db8::ffff:9", "1"), `200 "ok" policy="\"default\";q=2;w=60" ratelimit="\"default\";r=0;t=60" retry-after=""`)
	check(t, "same /64 again", e.do("GET", "2001:db8::3", "1"), `429 "Too Many Requests\n" policy="\"default\";q=2;w=60" ratelimit="\"default\";r=0;t=60" retry-after="60"`)
	check(t, "another /64", e.do("GET", "2001:db8:0:1::1", "1"), `200 "ok" policy="\"default\";q=2;w=60" ratelimit="\"default\";r=1;t=60" retry-after=""`)
	if c, n := e.n.Handler.Load(), e.n.After.Load(); c != 5 || n != 5 {
		t.Errorf("handler ran %d times, the next middleware %d; want 5 and 5 (the chain stops on 429)", c, n)
	}
}

func byHeaderAndProblemDetails(t *testing.T, a Adapter) {
	l, _ := NewLimiter(t, algo.FixedWindow{Limit: 1, Window: time.Minute})
	key, err := httplimit.ByHeader("X-API-Key")
	if err != nil {
		t.Fatal(err)
	}
	e := a.mount(t, l, key, httplimit.WithProblemDetails())
	check(t, "a", e.do("GET", "192.0.2.1", "1", "X-API-Key", "a"), `200 "ok" policy="\"default\";q=1;w=60" ratelimit="\"default\";r=0;t=60" retry-after=""`)
	check(t, "b", e.do("GET", "192.0.2.1", "1", "X-API-Key", "b"), `200 "ok" policy="\"default\";q=1;w=60" ratelimit="\"default\";r=0;t=60" retry-after=""`)
	rec := e.do("GET", "192.0.2.1", "1", "X-API-Key", "a")
	check(t, "a again", rec, `429 "{\"type\":\"https://iana.org/assignments/http-problem-types#quota-exceeded\",\"title\":\"Too Many Requests\",\"status\":429,\"violated-policies\":[\"default\"]}" policy="\"default\";q=1;w=60" ratelimit="\"default\";r=0;t=60" retry-after="60"`)
	if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type = %q", ct)
	}
	check(t, "no key", e.do("GET", "192.0.2.1", "1"), `400 "Bad Request\n" policy="" ratelimit="" retry-after=""`)
}

func cost(t *testing.T, a Adapter) {
	l, _ := NewLimiter(t, algo.FixedWindow{Limit: 10, Window: time.Minute})
	cost := func(r *http.Request) int64 {
		if r.Method == http.MethodPost {
			return 4
		}
		return 0 // exempt
	}
	e := a.mount(t, l, a.byIP(t), httplimit.WithCost(cost))
	check(t, "post", e.do("POST", "192.0.2.1", "1"), `200 "ok" policy="\"default\";q=10;w=60" ratelimit="\"default\";r=6;t=60" retry-after=""`)
	check(t, "get (cost 0)", e.do("GET", "192.0.2.1", "1"), `200 "ok" policy="" ratelimit="" retry-after=""`)
	e.do("POST", "192.0.2.1", "1")
	check(t, "third post", e.do("POST", "192.0.2.1", "1"), `429 "Too Many Requests\n" policy="\"default\";q=10;w=60" ratelimit="\"default\";r=2;t=60" retry-after="60"`)
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

func failurePolicy(t *testing.T, a Adapter) {
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
		check(t, tc.policy.String(), a.mount(t, l, a.byIP(t)).do("GET", "192.0.2.1", "1"), tc.want)
	}
}

func wait(t *testing.T, a Adapter) {
	l, clk := NewLimiter(t, algo.TokenBucket{Rate: 1, Burst: 1})
	e := a.mount(t, l, a.byIP(t), httplimit.WithWait(2*time.Second))
	check(t, "1", e.do("GET", "192.0.2.1", "1"), `200 "ok" policy="\"default\";q=1;w=1" ratelimit="\"default\";r=0;t=1" retry-after=""`)
	// The next token comes in 1 s, within the bound: the request waits (on the fake
	// clock) and is served.
	check(t, "2", e.do("GET", "192.0.2.1", "1"), `200 "ok" policy="\"default\";q=1;w=1" ratelimit="\"default\";r=0;t=1" retry-after=""`)
	if got := clk.Now().Sub(Epoch); got != time.Second {
		t.Errorf("waited %v, want 1s", got)
	}
}

// A composite's items reach the client as field lines of their own, in order.
func compositeLines(t *testing.T, a Adapter) {
	clk := clockx.NewFake(Epoch)
	st, err := local.New(local.WithClock(clk), local.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	sec, _ := limiter.New(st, algo.FixedWindow{Limit: 2, Window: time.Second}, limiter.WithClock(clk))
	day, _ := limiter.New(st, algo.Named(algo.FixedWindow{Limit: 1000, Window: 24 * time.Hour}, "daily"), limiter.WithClock(clk))
	all, err := limiter.All(sec, day)
	if err != nil {
		t.Fatal(err)
	}
	h := a.mount(t, all, a.byIP(t)).do("GET", "192.0.2.1", "1").Result().Header
	if got, want := h.Values("RateLimit-Policy"), []string{`"fw-2-1s";q=2;w=1`, `"daily";q=1000;w=86400`}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("RateLimit-Policy = %q, want %q", got, want)
	}
	if got, want := h.Values("RateLimit"), []string{`"fw-2-1s";r=1;t=1`, `"daily";r=999;t=86400`}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("RateLimit = %q, want %q", got, want)
	}
}

// The writer a denied-request or error handler gets is still the framework's as far as it
// can tell: it flushes and hijacks as the framework's does.
func handlersGetAFlushingWriter(t *testing.T, a Adapter) {
	if !a.Flushes {
		t.Skip("the framework's writer does not flush")
	}
	l, _ := NewLimiter(t, algo.FixedWindow{Limit: 2, Window: time.Minute})
	var flusher, hijacker bool
	key := func(*http.Request) (string, error) { return "", errors.New("no key") }
	e := a.mount(t, l, key, httplimit.WithErrorHandler(func(w http.ResponseWriter, _ *http.Request, _ error) {
		_, flusher = w.(http.Flusher)
		_, hijacker = w.(http.Hijacker)
		w.WriteHeader(http.StatusTeapot)
	}))
	if rec := e.do("GET", "192.0.2.1", "1"); rec.Code != http.StatusTeapot || !flusher || !hijacker {
		t.Errorf("status %d, Flusher %v, Hijacker %v; want 418, true, true", rec.Code, flusher, hijacker)
	}
}

func invalidConfig(t *testing.T, a Adapter) {
	if _, err := a.Mount(t, nil, a.byIP(t), nil, new(Counts)); !errors.Is(err, algo.ErrInvalidConfig) {
		t.Errorf("nil limiter: %v, want ErrInvalidConfig", err)
	}
}

// Benchmark serves GET / through a's middleware (a limit far above the load, one key for
// every request) and reports what a request costs, the framework's routing and the
// route's handler included.
func Benchmark(b *testing.B, a Adapter) {
	l, _ := NewLimiter(b, algo.TokenBucket{Rate: 1e9, Burst: 1e9})
	key := func(*http.Request) (string, error) { return "k", nil }
	h, err := a.Mount(b, l, key, nil, new(Counts))
	if err != nil {
		b.Fatal(err)
	}
	serve(b, h)
}

// serve runs GET / on h b.N times into a writer that discards the body.
func serve(b *testing.B, h http.Handler) {
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	w := &discard{h: http.Header{}}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		clear(w.h)
		h.ServeHTTP(w, req)
		if w.code != http.StatusOK {
			b.Fatalf("status %d", w.code)
		}
	}
}

// discard is an http.ResponseWriter that keeps the status and drops the body.
type discard struct {
	h    http.Header
	code int
}

func (w *discard) Header() http.Header         { return w.h }
func (w *discard) Write(p []byte) (int, error) { return len(p), nil }
func (w *discard) WriteHeader(code int)        { w.code = code }
