package httplimit_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ratekit/limiter/adaptive"
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

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

func TestConcurrencyShedsBeyondTheLimit(t *testing.T) {
	t.Parallel()
	l, _ := newAdaptive(t, adaptive.Fixed{Limit: 1})
	entered, release := make(chan struct{}), make(chan struct{})
	h := httplimit.Concurrency(l, httplimit.ConcurrencyRetryAfter(1500*time.Millisecond))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	h := httplimit.Concurrency(l)(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
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
	hc := httplimit.Concurrency(l)(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
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
	h := httplimit.Concurrency(l)(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
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
	l, _ := newAdaptive(t, adaptive.Fixed{Limit: 1})
	for name, h := range map[string]http.Handler{
		"nil limiter": httplimit.Concurrency(nil)(hello),
		"nil next":    httplimit.Concurrency(l)(nil),
	} {
		if rec := serve(h, httptest.NewRequest(http.MethodGet, "/", nil)); rec.Code != http.StatusInternalServerError {
			t.Errorf("%s: %d, want 500", name, rec.Code)
		}
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
	h := httplimit.Concurrency(l)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
