package httplimit_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/store"
)

// downLimiter returns a limiter whose store is down, with policy p.
func downLimiter(tb testing.TB, p limiter.FailurePolicy) (*limiter.Limiter, *failingStore) {
	tb.Helper()
	st := &failingStore{}
	l, err := limiter.New(st, algo.TokenBucket{Rate: 10, Burst: 10},
		limiter.WithFailurePolicy(p), limiter.WithClock(clockx.NewFake(epoch)))
	if err != nil {
		tb.Fatalf("limiter.New: %v", err)
	}
	return l, st
}

func TestStoreDown(t *testing.T) {
	t.Parallel()
	for _, wait := range []time.Duration{0, 2 * time.Second} {
		opts := []httplimit.Option{httplimit.WithWait(wait)}
		name := "wait=" + wait.String()

		t.Run(name+"/fail-closed", func(t *testing.T) {
			t.Parallel()
			l, st := downLimiter(t, limiter.FailClosed)
			next := &counter{}
			var got error
			h := mustMiddleware(t, l, mustByIP(t), append(opts,
				httplimit.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
					got = err
					httplimit.DefaultErrorHandler(w, r, err)
				}))...)(next)
			rec := get(h, "192.0.2.1:1")
			checkResponse(t, "fail-closed", rec, response{503, "", "", ""})
			if got, want := rec.Body.String(), "Service Unavailable\n"; got != want {
				t.Errorf("body %q, want %q", got, want)
			}
			if !errors.Is(got, store.ErrUnavailable) {
				t.Errorf("error handler got %v, want one wrapping store.ErrUnavailable", got)
			}
			if next.calls() != 0 {
				t.Error("handler called while the store is down under FailClosed")
			}
			if st.calls.Load() != 1 {
				t.Errorf("store called %d times, want 1", st.calls.Load())
			}
		})

		t.Run(name+"/fail-open", func(t *testing.T) {
			t.Parallel()
			l, _ := downLimiter(t, limiter.FailOpen)
			next := &counter{}
			h := mustMiddleware(t, l, mustByIP(t), opts...)(next)
			for i := 0; i < 3; i++ {
				checkResponse(t, "fail-open", get(h, "192.0.2.1:1"), response{200, "", "", ""})
			}
			if got, want := next.calls(), int64(3); got != want {
				t.Errorf("handler called %d times, want %d", got, want)
			}
		})
	}
}

func TestStoreDownFallback(t *testing.T) {
	t.Parallel()
	fb, fbClock := newLimiter(t, algo.TokenBucket{Rate: 1, Burst: 1}, epoch)
	l, _ := downLimiter(t, limiter.Fallback(fb))
	next := &counter{}
	h := mustMiddleware(t, l, mustByIP(t))(next)
	// The fallback's figures are not the advertised policy's: no RateLimit headers, but a
	// fallback denial is a rate-limit denial, with Retry-After.
	checkResponse(t, "fallback allows", get(h, "192.0.2.1:1"), response{200, "", "", ""})
	checkResponse(t, "fallback denies", get(h, "192.0.2.1:1"), response{429, "", "", "1"})
	if got, want := next.calls(), int64(1); got != want {
		t.Errorf("handler called %d times, want %d", got, want)
	}

	// In wait mode the fallback's reservation is waited for, on the fallback's clock.
	hw := mustMiddleware(t, l, mustByIP(t), httplimit.WithWait(2*time.Second))(next)
	fbClock.Add(time.Second) // the token is back
	checkResponse(t, "wait: fallback grants now", get(hw, "192.0.2.1:1"), response{200, "", "", ""})
	checkResponse(t, "wait: fallback grants in 1s", get(hw, "192.0.2.1:1"), response{200, "", "", ""})
	if got, want := fbClock.Now().Sub(epoch), 2*time.Second; got != want {
		t.Errorf("fallback clock at %v, want %v", got, want)
	}
	hs := mustMiddleware(t, l, mustByIP(t), httplimit.WithWait(500*time.Millisecond))(next)
	checkResponse(t, "wait: fallback denies", get(hs, "192.0.2.1:1"), response{429, "", "", "1"})
	if got, want := next.calls(), int64(3); got != want {
		t.Errorf("handler called %d times, want %d", got, want)
	}
}
