package httplimit_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ratekit/limiter/adaptive"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/httplimit"
)

func newAdaptive(t *testing.T, a adaptive.Algorithm) (*adaptive.Limiter, *clockx.Fake) {
	t.Helper()
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	l, err := adaptive.New(a, adaptive.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	return l, clk
}

// mustConcurrency is httplimit.Concurrency for arguments that are valid.
func mustConcurrency(t testing.TB, l *adaptive.Limiter, opts ...httplimit.Option) func(http.Handler) http.Handler {
	t.Helper()
	mw, err := httplimit.Concurrency(l, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return mw
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

func TestConcurrencyShedsBeyondTheLimit(t *testing.T) {
	t.Parallel()
	l, _ := newAdaptive(t, adaptive.Fixed{Limit: 1})
	entered, release := make(chan struct{}), make(chan struct{})
	h := mustConcurrency(t, l, httplimit.ConcurrencyRetryAfter(1500*time.Millisecond))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(entered)
			<-release
		}
		fmt.Fprint(w, "ok")
	}))
	done := make(chan int)
	go func() { done <- serve(h, httptest.NewRequest(http.MethodGet, "/slow", nil)).Code }()
	<-entered
	rec := serve(h, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "2" {
		t.Fatalf("second request while one is in flight: %d, Retry-After %q; want 503 and 2", rec.Code, rec.Header().Get("Retry-After"))
	}
	close(release)
	if code := <-done; code != http.StatusOK {
		t.Fatalf("first request: %d", code)
	}
	if rec := serve(h, httptest.NewRequest(http.MethodGet, "/", nil)); rec.Code != http.StatusOK || rec.Body.String() != "ok" {
		t.Fatalf("after the first finished: %d %q", rec.Code, rec.Body.String())
	}
}

func TestConcurrencyReportsOutcomes(t *testing.T) {
	t.Parallel()
	l, clk := newAdaptive(t, adaptive.AIMD{Initial: 10, Timeout: 100 * time.Millisecond})
	status := http.StatusOK
	h := mustConcurrency(t, l)(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		clk.Add(10 * time.Millisecond) // the handler's latency
		w.WriteHeader(status)
	}))
	status = http.StatusServiceUnavailable // a downstream refused: a drop
	serve(h, httptest.NewRequest(http.MethodGet, "/", nil))
	if got := l.Limit(); got != 9 {
		t.Fatalf("after a 503 from the handler: limit %d, want 9", got)
	}
	status = http.StatusNotFound // a success as far as latency goes; the traffic is low though
	serve(h, httptest.NewRequest(http.MethodGet, "/", nil))
	if got, in := l.Limit(), l.InFlight(); got != 9 || in != 0 {
		t.Fatalf("after a 404: limit %d, %d in flight; want 9, 0", got, in)
	}
	// A client that goes away while served is not a sample.
	ctx, cancel := context.WithCancel(context.Background())
	hc := mustConcurrency(t, l)(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		cancel()
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	serve(hc, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx))
	if got := l.Limit(); got != 9 {
		t.Fatalf("a departed client moved the limit to %d", got)
	}
	// A request whose context is already done is not admitted.
	if rec := serve(h, httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx)); rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") != "" {
		t.Fatalf("done context: %d, Retry-After %q; want 503 without it", rec.Code, rec.Header().Get("Retry-After"))
	}
}

func TestConcurrencyPanicReleases(t *testing.T) {
	t.Parallel()
	l, _ := newAdaptive(t, adaptive.Fixed{Limit: 1})
	h := mustConcurrency(t, l)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	func() {
		defer func() { _ = recover() }()
		serve(h, httptest.NewRequest(http.MethodGet, "/", nil))
	}()
	if got := l.InFlight(); got != 0 {
		t.Fatalf("%d in flight after a panic", got)
	}
}

func TestConcurrencyNil(t *testing.T) {
	t.Parallel()
	if mw, err := httplimit.Concurrency(nil); mw != nil || !errors.Is(err, algo.ErrInvalidConfig) {
		t.Errorf("Concurrency(nil) = %v, %v; want no middleware and an error wrapping ErrInvalidConfig", mw != nil, err)
	}
	l, _ := newAdaptive(t, adaptive.Fixed{Limit: 1})
	// A nil next handler only shows when the middleware wraps it: 500, never a panic.
	if rec := serve(mustConcurrency(t, l)(nil), httptest.NewRequest(http.MethodGet, "/", nil)); rec.Code != http.StatusInternalServerError {
		t.Errorf("nil next: %d, want 500", rec.Code)
	}
}

// Options with a value they cannot use, and options of the other middleware, are errors
// wrapping ErrInvalidConfig, at construction.
func TestConcurrencyOptionErrors(t *testing.T) {
	t.Parallel()
	l, _ := newAdaptive(t, adaptive.Fixed{Limit: 1})
	lim, _ := newLimiter(t, algo.FixedWindow{Limit: 1, Window: time.Second}, epoch)
	key, _ := httplimit.ByHeader("X-Key")
	bad := map[string]func() error{
		"ConcurrencyRetryAfter(0)": func() error { _, err := httplimit.Concurrency(l, httplimit.ConcurrencyRetryAfter(0)); return err },
		"ConcurrencyOutcome(nil)":  func() error { _, err := httplimit.Concurrency(l, httplimit.ConcurrencyOutcome(nil)); return err },
		"WithDeniedHandler(nil)":   func() error { _, err := httplimit.Concurrency(l, httplimit.WithDeniedHandler(nil)); return err },
		"WithCost to Concurrency": func() error {
			_, err := httplimit.Concurrency(l, httplimit.WithCost(func(*http.Request) int64 { return 1 }))
			return err
		},
		"WithWait to Concurrency":           func() error { _, err := httplimit.Concurrency(l, httplimit.WithWait(time.Second)); return err },
		"WithProblemDetails to Concurrency": func() error { _, err := httplimit.Concurrency(l, httplimit.WithProblemDetails()); return err },
		"ConcurrencyRetryAfter to Middleware": func() error {
			_, err := httplimit.Middleware(lim, key, httplimit.ConcurrencyRetryAfter(time.Second))
			return err
		},
		"ConcurrencyOutcome to Middleware": func() error {
			_, err := httplimit.Middleware(lim, key, httplimit.ConcurrencyOutcome(httplimit.DefaultConcurrencyOutcome))
			return err
		},
	}
	for name, f := range bad {
		if err := f(); !errors.Is(err, algo.ErrInvalidConfig) {
			t.Errorf("%s: %v, want an error wrapping ErrInvalidConfig", name, err)
		}
	}
}

// The options Concurrency shares with Middleware: the policy's name, no headers, the
// handler of a shed request.
func TestConcurrencySharedOptions(t *testing.T) {
	t.Parallel()
	l, _ := newAdaptive(t, adaptive.Fixed{Limit: 1})
	teapot := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	tok, ok, err := l.TryAcquire(context.Background()) // the one place is taken: every request is shed
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	defer tok.Done(adaptive.Ignore)
	rec := serve(mustConcurrency(t, l, httplimit.WithDeniedHandler(teapot), httplimit.WithPolicyName("inflight"))(hello),
		httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusTeapot || rec.Header().Get("Retry-After") != "1" || rec.Header().Get("RateLimit") != `"inflight";r=0` {
		t.Errorf("shed with WithDeniedHandler, WithPolicyName: %d %v", rec.Code, rec.Header())
	}
	rec = serve(mustConcurrency(t, l, httplimit.WithoutHeaders())(hello), httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("RateLimit") != "" || rec.Header().Get("RateLimit-Policy") != "" {
		t.Errorf("shed with WithoutHeaders: %d %v", rec.Code, rec.Header())
	}
}

func TestDefaultConcurrencyOutcome(t *testing.T) {
	t.Parallel()
	past, cancel := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel()
	gone, cancel2 := context.WithCancel(context.Background())
	cancel2()
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	for _, c := range []struct {
		r      *http.Request
		status int
		want   adaptive.Outcome
	}{
		{req, 200, adaptive.Success},
		{req, 500, adaptive.Success},
		{req, 503, adaptive.Overload},
		{req, 429, adaptive.Overload},
		{req, 504, adaptive.Timeout},
		{req.WithContext(past), 200, adaptive.Timeout},
		{req.WithContext(gone), 503, adaptive.Ignore},
	} {
		if got := httplimit.DefaultConcurrencyOutcome(c.r, c.status); got != c.want {
			t.Errorf("status %d, ctx err %v: %v, want %v", c.status, c.r.Context().Err(), got, c.want)
		}
	}
}

func ExampleConcurrency() {
	l, err := adaptive.New(adaptive.Fixed{Limit: 1}) // adaptive.Gradient{} in production
	if err != nil {
		panic(err)
	}
	release := make(chan struct{})
	busy := make(chan struct{})
	mw, err := httplimit.Concurrency(l)
	if err != nil {
		panic(err)
	}
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			close(busy)
			<-release
		}
		fmt.Fprintln(w, "hello")
	}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/slow", nil))
	}()
	<-busy
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	fmt.Println(rec.Code, "Retry-After:", rec.Header().Get("Retry-After"))
	close(release)
	<-done
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	fmt.Println(rec.Code)
	// Output:
	// 503 Retry-After: 1
	// 200
}
