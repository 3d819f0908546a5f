package adapter

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/internal/adaptertest"
)

// ctxWriter is an adapter's writer: it records whether the request was let through.
type ctxWriter struct {
	http.ResponseWriter
	passed *bool
	// The response the framework's handlers wrote, as WrittenResponse reports it.
	status int
	header http.Header
}

func (w *ctxWriter) WrittenResponse() (int, http.Header) { return w.status, w.header }

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
		return wrapped{&ctxWriter{ResponseWriter: rw, passed: p}}
	}); code != http.StatusOK || !passed {
		t.Errorf("allowed, writer wrapped: %d, let through %v; want 200, true", code, passed)
	}
	if code, passed := serve(func(rw http.ResponseWriter, p *bool) http.ResponseWriter {
		return &ctxWriter{ResponseWriter: rw, passed: p}
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

// TestChargeReadsTheWrittenResponse: WithChargeAfter gets the status and header the
// framework's handlers wrote, which only the adapter's writer knows (found through a
// wrapping writer too), and charges what it returns to the key of the check.
func TestChargeReadsTheWrittenResponse(t *testing.T) {
	t.Parallel()
	for _, wrap := range []bool{false, true} {
		l, _ := adaptertest.NewLimiter(t, algo.TokenBucket{Rate: 1, Burst: 10})
		key := func(*http.Request) (string, error) { return "k", nil }
		var status int
		var usage string
		charge := httplimit.WithChargeAfter(func(_ *http.Request, s int, h http.Header) int64 {
			status, usage = s, h.Get("X-Usage-Tokens")
			return 6
		})
		h, err := Handler(l, key, []httplimit.Option{charge}, func(w *ctxWriter, _ *http.Request) {
			// The framework's handler answers through the framework, not through w.
			w.status, w.header = http.StatusCreated, http.Header{"X-Usage-Tokens": {"6"}}
		})
		require.NoError(t, err)
		var w http.ResponseWriter = &ctxWriter{ResponseWriter: httptest.NewRecorder()}
		if wrap {
			w = wrapped{w}
		}
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/", nil))
		assert.Equal(t, http.StatusCreated, status, "wrapped %v", wrap)
		assert.Equal(t, "6", usage, "wrapped %v", wrap)
		d, err := l.AllowN(context.Background(), "k", 1)
		require.NoError(t, err)
		assert.Equal(t, int64(2), d.Remaining, "wrapped %v: 10 − 1 checked − 6 charged − 1", wrap)
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
