package httplimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/adaptive"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/httplimit"
)

// The adapter suite (TestAdapterSuite/ChargeAfter, ChargeError) covers debt, a cost of 0,
// the status and a failed charge; these are the cases of net/http's own.

// remaining reports what key k has left, taking one permit.
func remaining(t *testing.T, l *limiter.Limiter, k string) int64 {
	t.Helper()
	d, err := l.AllowN(context.Background(), k, 1)
	require.NoError(t, err)
	return d.Remaining
}

// TestChargeAfterStatus: the status the handler wrote, 200 for one that wrote none (as
// net/http sends), and the writer the handler gets keeps its optional interfaces.
func TestChargeAfterStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		write  func(http.ResponseWriter)
		status int
	}{
		{"nothing", func(http.ResponseWriter) {}, http.StatusOK},
		{"body", func(w http.ResponseWriter) { _, _ = w.Write([]byte("ok")) }, http.StatusOK},
		{"201", func(w http.ResponseWriter) { w.WriteHeader(http.StatusCreated) }, http.StatusCreated},
		{"flush", func(w http.ResponseWriter) { w.(http.Flusher).Flush() }, http.StatusOK},
	} {
		l, _ := newLimiter(t, algo.TokenBucket{Rate: 1, Burst: 10}, epoch)
		var got int
		h := mustMiddleware(t, l, mustByIP(t), httplimit.WithChargeAfter(func(_ *http.Request, status int, _ http.Header) int64 {
			got = status
			return 2
		}))(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { tc.write(w) }))
		get(h, "192.0.2.1:1")
		assert.Equal(t, tc.status, got, tc.name)
		assert.Equal(t, int64(6), remaining(t, l, "192.0.2.1"), "%s: 10 − 1 checked − 2 charged − 1", tc.name)
	}
}

// TestChargeAfterClientGone: a client that leaves during the response does not escape the
// charge: it is made on the request's context without its cancellation.
func TestChargeAfterClientGone(t *testing.T) {
	t.Parallel()
	l, _ := newLimiter(t, algo.TokenBucket{Rate: 1, Burst: 10}, epoch)
	ctx, cancel := context.WithCancel(context.Background())
	h := mustMiddleware(t, l, mustByIP(t), httplimit.WithChargeAfter(func(*http.Request, int, http.Header) int64 { return 5 }))(
		http.HandlerFunc(func(http.ResponseWriter, *http.Request) { cancel() }))
	req := httptest.NewRequest(http.MethodGet, "/", nil).WithContext(ctx)
	req.RemoteAddr = "192.0.2.1:1"
	h.ServeHTTP(httptest.NewRecorder(), req)
	assert.Equal(t, int64(3), remaining(t, l, "192.0.2.1"), "10 − 1 checked − 5 charged − 1")
}

// TestChargeAfterOnlyServed: an exempt request (cost 0), a denied one and one the error
// handler answered are not charged; a delayed one (WithWait) is.
func TestChargeAfterOnlyServed(t *testing.T) {
	t.Parallel()
	l, clk := newLimiter(t, algo.TokenBucket{Rate: 1, Burst: 2}, epoch)
	var calls int
	charge := httplimit.WithChargeAfter(func(*http.Request, int, http.Header) int64 { calls++; return 1 })
	cost := httplimit.WithCost(func(r *http.Request) int64 {
		if r.Header.Get("X-Exempt") != "" {
			return 0
		}
		return 1
	})
	next := &counter{}
	h := mustMiddleware(t, l, mustByIP(t), charge, cost, httplimit.WithWait(time.Second))(next)

	get(h, "192.0.2.1:1", "X-Exempt", "1")
	assert.Equal(t, 0, calls, "exempt")
	assert.Equal(t, 200, get(h, "192.0.2.1:1").Code) // 1 checked, 1 charged: 0 left
	assert.Equal(t, 1, calls)
	assert.Equal(t, 200, get(h, "192.0.2.1:1").Code, "waits 1 s for its token") // -1 after its charge
	assert.Equal(t, 2, calls, "a delayed request is charged")
	assert.Equal(t, time.Second, clk.Now().Sub(epoch))
	assert.Equal(t, 429, get(h, "192.0.2.1:1").Code, "2 s away, beyond the wait")
	assert.Equal(t, 2, calls, "denied")
	assert.Equal(t, 400, get(mustMiddleware(t, l, mustByHeader(t, "X-Key"), charge)(next), "192.0.2.1:1").Code)
	assert.Equal(t, 2, calls, "answered by the error handler")
	assert.Equal(t, int64(3), next.calls())
}

// TestChargeAfterTooLarge: a cost the limiter cannot record reaches the error handler,
// which cannot change the response any more.
func TestChargeAfterTooLarge(t *testing.T) {
	t.Parallel()
	l, _ := newLimiter(t, algo.TokenBucket{Rate: 1, Burst: 10}, epoch)
	var got error
	h := mustMiddleware(t, l, mustByIP(t),
		httplimit.WithChargeAfter(func(*http.Request, int, http.Header) int64 { return 1<<53 + 1 }),
		httplimit.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
			got = err
			httplimit.DefaultErrorHandler(w, r, err)
		}))(&counter{})
	rec := get(h, "192.0.2.1:1")
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "ok", rec.Body.String())
	require.ErrorIs(t, got, algo.ErrInvalidRequest)
	assert.Equal(t, int64(8), remaining(t, l, "192.0.2.1"), "nothing charged")
}

// uncharged is an algorithm that does not state algo.Chargeable.
type uncharged struct{ algo.Algorithm }

func (uncharged) Capabilities() algo.Capability { return 0 }

func TestChargeAfterInvalid(t *testing.T) {
	t.Parallel()
	l, _ := newLimiter(t, algo.TokenBucket{Rate: 1, Burst: 10}, epoch)
	u, _ := newLimiter(t, uncharged{algo.TokenBucket{Rate: 1, Burst: 10}}, epoch)
	all, err := limiter.All(l, u)
	require.NoError(t, err)
	f := func(*http.Request, int, http.Header) int64 { return 1 }
	for _, tc := range []struct {
		name string
		make func() error
		want string
	}{
		{"nil", func() error {
			_, err := httplimit.Middleware(l, mustByIP(t), httplimit.WithChargeAfter(nil))
			return err
		}, "WithChargeAfter(nil)"},
		{"uncharged", func() error {
			_, err := httplimit.Middleware(u, mustByIP(t), httplimit.WithChargeAfter(f))
			return err
		}, "cannot be charged"},
		{"composite", func() error {
			_, err := httplimit.Middleware(all, mustByIP(t), httplimit.WithChargeAfter(f))
			return err
		}, "cannot be charged"},
		{"concurrency", func() error {
			a, err := adaptive.New(adaptive.Fixed{Limit: 1})
			require.NoError(t, err)
			_, err = httplimit.Concurrency(a, httplimit.WithChargeAfter(f))
			return err
		}, "WithChargeAfter applies to Middleware"},
	} {
		err := tc.make()
		require.ErrorIs(t, err, algo.ErrInvalidConfig, tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
	}
}
