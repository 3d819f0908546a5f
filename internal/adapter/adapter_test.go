package adapter

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/adaptertest"
)

// ctxWriter is an adapter's writer: it records whether the request was let through.
type ctxWriter struct {
	http.ResponseWriter
	passed *bool
}

// wrapped is a writer wrapping another, as a middleware between may wrap it.
type wrapped struct{ http.ResponseWriter }

func (w wrapped) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func TestHandler(t *testing.T) {
	t.Parallel()
	l, _ := adaptertest.NewLimiter(t, algo.FixedWindow{Limit: 1, Window: time.Minute})
	key := func(*http.Request) (string, error) { return "k", nil }
	h, err := Handler(l, key, nil, func(w *ctxWriter, _ *http.Request) { *w.passed = true })
	if err != nil {
		t.Fatal(err)
	}
	serve := func(w func(http.ResponseWriter, *bool) http.ResponseWriter) (int, bool) {
		rec, passed := httptest.NewRecorder(), false
		h.ServeHTTP(w(rec, &passed), httptest.NewRequest(http.MethodGet, "/", nil))
		return rec.Code, passed
	}
	if code, passed := serve(func(rw http.ResponseWriter, p *bool) http.ResponseWriter {
		return wrapped{&ctxWriter{rw, p}}
	}); code != http.StatusOK || !passed {
		t.Errorf("allowed, writer wrapped: %d, let through %v; want 200, true", code, passed)
	}
	if code, passed := serve(func(rw http.ResponseWriter, p *bool) http.ResponseWriter {
		return &ctxWriter{rw, p}
	}); code != http.StatusTooManyRequests || passed {
		t.Errorf("denied: %d, let through %v; want 429, false", code, passed)
	}
	l2, _ := adaptertest.NewLimiter(t, algo.FixedWindow{Limit: 1, Window: time.Minute})
	h, _ = Handler(l2, key, nil, func(*ctxWriter, *http.Request) { t.Error("let through without its writer") })
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	if rec.Code != http.StatusInternalServerError {
		t.Errorf("served without the adapter's writer: %d, want 500", rec.Code)
	}
	if _, err := Handler(nil, key, nil, func(*ctxWriter, *http.Request) {}); err == nil {
		t.Error("nil limiter: no error")
	}
}

func TestPool(t *testing.T) {
	t.Parallel()
	var p Pool[ctxWriter]
	w := p.Get()
	w.passed = new(bool)
	p.Put(w)
	if w.passed != nil {
		t.Error("Put kept what the writer referred to")
	}
	if w := p.Get(); w.passed != nil || w.ResponseWriter != nil {
		t.Errorf("Get returned %+v, want a zero writer", w)
	}
}
