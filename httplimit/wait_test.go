package httplimit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
)

// clockSpy is a next handler that records the fake clock's time when it runs.
type clockSpy struct {
	clk *clockx.Fake
	at  []time.Duration // since epoch
}

func (s *clockSpy) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	s.at = append(s.at, s.clk.Now().Sub(epoch))
	w.WriteHeader(http.StatusOK)
}

func TestWaitGranted(t *testing.T) {
	t.Parallel()
	l, clk := newLimiter(t, algo.TokenBucket{Rate: 1, Burst: 1}, epoch)
	spy := &clockSpy{clk: clk}
	h := mustMiddleware(t, l, mustByIP(t), httplimit.WithWait(2*time.Second))(spy)
	const policy = `"default";q=1;w=1`
	// 1: the token is there. 2: one second of debt, waited for; after the wait the
	// bucket is full again in 1 s. 3: the clock moved by the wait, the next token comes
	// one second later again.
	checkResponse(t, "request 1", get(h, "192.0.2.1:1"), response{200, policy, `"default";r=0;t=1`, ""})
	checkResponse(t, "request 2", get(h, "192.0.2.1:1"), response{200, policy, `"default";r=0;t=1`, ""})
	checkResponse(t, "request 3", get(h, "192.0.2.1:1"), response{200, policy, `"default";r=0;t=1`, ""})
	want := []time.Duration{0, time.Second, 2 * time.Second}
	if len(spy.at) != len(want) {
		t.Fatalf("handler ran at %v, want %v", spy.at, want)
	}
	for i := range want {
		if spy.at[i] != want[i] {
			t.Errorf("handler ran at %v, want %v", spy.at, want)
			break
		}
	}
	if got, want := clk.Now().Sub(epoch), 2*time.Second; got != want {
		t.Errorf("clock advanced by %v, want %v", got, want)
	}
}

func TestWaitTooLong(t *testing.T) {
	t.Parallel()
	l, clk := newLimiter(t, algo.TokenBucket{Rate: 1, Burst: 1}, epoch)
	spy := &clockSpy{clk: clk}
	h := mustMiddleware(t, l, mustByIP(t), httplimit.WithWait(500*time.Millisecond))(spy)
	const policy = `"default";q=1;w=1`
	checkResponse(t, "request 1", get(h, "192.0.2.1:1"), response{200, policy, `"default";r=0;t=1`, ""})
	// The token comes in 1 s, beyond the 500 ms bound: rejected at once. Retrying in
	// 500 ms (rounded up to 1 s) would be granted within the bound.
	checkResponse(t, "request 2", get(h, "192.0.2.1:1"), response{429, policy, `"default";r=0;t=1`, "1"})
	if got := len(spy.at); got != 1 {
		t.Errorf("handler ran %d times, want 1", got)
	}
	if got := clk.Now(); !got.Equal(epoch) {
		t.Errorf("clock moved to %v: a rejected request must not sleep", got.Sub(epoch))
	}
	// Nothing was reserved: after 500 ms the next one waits 500 ms and is served.
	clk.Add(500 * time.Millisecond)
	checkResponse(t, "request 3", get(h, "192.0.2.1:1"), response{200, policy, `"default";r=0;t=1`, ""})
	if got, want := clk.Now().Sub(epoch), time.Second; got != want {
		t.Errorf("clock at %v, want %v", got, want)
	}
}

func TestWaitCostLargerThanLimit(t *testing.T) {
	t.Parallel()
	l, _ := newLimiter(t, algo.GCRA{Rate: 1, Burst: 2}, epoch)
	h := mustMiddleware(t, l, mustByIP(t), httplimit.WithWait(time.Hour),
		httplimit.WithCost(func(*http.Request) int64 { return 3 }))(&counter{})
	checkResponse(t, "cost 3 of 2", get(h, "192.0.2.1:1"), response{429, `"default";q=2;w=2`, `"default";r=2`, ""})
}

func TestWaitBoundedByDeadline(t *testing.T) {
	t.Parallel()
	l, clk := newLimiter(t, algo.TokenBucket{Rate: 1.0 / 600, Burst: 1}, epoch)
	spy := &clockSpy{clk: clk}
	h := mustMiddleware(t, l, mustByIP(t), httplimit.WithWait(time.Hour))(spy)
	get(h, "192.0.2.1:1")
	// The request's deadline (real time) is far nearer than the 10 min wait (and than the
	// 1 h bound), and far enough that a loaded machine cannot pass it before the request is
	// served.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	req.RemoteAddr = "192.0.2.1:1"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if got, want := rec.Code, http.StatusTooManyRequests; got != want {
		t.Errorf("status %d, want %d", got, want)
	}
	if got := len(spy.at); got != 1 {
		t.Errorf("handler ran %d times, want 1", got)
	}
	if got := clk.Now(); !got.Equal(epoch) {
		t.Errorf("clock moved by %v", got.Sub(epoch))
	}
}

// cancellingClock is a fake clock whose Sleep cancels the sleeper's request, as a client
// that hangs up while its request waits.
type cancellingClock struct {
	*clockx.Fake
	cancel context.CancelFunc
}

func (c *cancellingClock) Sleep(ctx context.Context, d time.Duration) error {
	if c.cancel != nil {
		c.cancel()
		return ctx.Err()
	}
	return c.Fake.Sleep(ctx, d)
}

func TestWaitClientGone(t *testing.T) {
	t.Parallel()
	clk := &cancellingClock{Fake: clockx.NewFake(epoch)}
	st := teststore.Local(t, local.WithClock(clk.Fake), local.WithSweepInterval(0))
	t.Cleanup(func() { _ = st.Close() })
	l, err := limiter.New(st, algo.TokenBucket{Rate: 1, Burst: 1}, limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	next := &counter{}
	var handled error
	h := mustMiddleware(t, l, mustByIP(t), httplimit.WithWait(5*time.Second),
		httplimit.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
			handled = err
			httplimit.DefaultErrorHandler(w, r, err)
		}))(next)
	get(h, "192.0.2.1:1") // takes the token

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	clk.cancel = cancel
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/", nil)
	req.RemoteAddr = "192.0.2.1:1"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	clk.cancel = nil
	if got := next.calls(); got != 1 {
		t.Errorf("handler called %d times, want 1: a departed client's request must not be served", got)
	}
	if !errors.Is(handled, context.Canceled) {
		t.Errorf("error handler got %v, want context.Canceled", handled)
	}
	if got, want := rec.Code, http.StatusServiceUnavailable; got != want {
		t.Errorf("status %d, want %d", got, want)
	}
	// The reservation was given back: the next request waits 1 s, not 2 s.
	r, err := l.Reserve(context.Background(), "192.0.2.1", 1, algo.Forever)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Delay(), time.Second; got != want {
		t.Errorf("next reservation waits %v, want %v (the cancelled one was not refunded)", got, want)
	}
}
