package adaptertest

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// Answer is what the routes of a Mount answer, read from the request's header through
// get: the status X-Status names (200 without it), and the usage to report in the
// response's X-Usage-Tokens header (the request's X-Usage; none without it). Routes
// answer the body "ok" with that status.
func Answer(get func(name string) string) (status int, usage string) {
	status = http.StatusOK
	if s, err := strconv.Atoi(get("X-Status")); err == nil {
		status = s
	}
	return status, get("X-Usage")
}

// usage is a WithChargeAfter function that charges the X-Usage-Tokens the handler
// reported, nothing for a response of 500 or more, and records the statuses it saw.
type usage struct {
	mu       sync.Mutex
	statuses []int
}

func (u *usage) charge(_ *http.Request, status int, h http.Header) int64 {
	u.mu.Lock()
	u.statuses = append(u.statuses, status)
	u.mu.Unlock()
	if status >= 500 {
		return 0
	}
	n, _ := strconv.ParseInt(h.Get("X-Usage-Tokens"), 10, 64)
	return n
}

func (u *usage) seen() []int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]int(nil), u.statuses...)
}

// chargeAfter: what the handler reports using is charged after it, to the key of the
// check, and the debt denies the next requests with Retry-After.
func chargeAfter(t *testing.T, a Adapter) {
	// 10 tokens a minute; Rate 1/6 is not exact in binary, so the waits are checked
	// through Retry-After's whole seconds.
	l, clk := NewLimiter(t, algo.TokenBucket{Rate: 10.0 / 60, Burst: 10})
	u := new(usage)
	e := a.mount(t, l, a.byIP(t), httplimit.WithChargeAfter(u.charge))

	// The check takes 1 (9 left), the handler reports 50: 41 in debt, the next token
	// 42 tokens (252 s) away.
	check(t, "50 tokens", e.do("GET", "192.0.2.1", "1", "X-Usage", "50"),
		`200 "ok" policy="\"default\";q=10;w=60" ratelimit="\"default\";r=9;t=6" retry-after=""`)
	check(t, "next", e.do("GET", "192.0.2.1", "1"),
		`429 "Too Many Requests\n" policy="\"default\";q=10;w=60" ratelimit="\"default\";r=0;t=252" retry-after="252"`)
	assert.Equal(t, int64(1), e.n.Handler.Load(), "the denied request did not reach the handler")
	clk.Add(252 * time.Second)
	check(t, "debt earned back", e.do("GET", "192.0.2.1", "1"),
		`200 "ok" policy="\"default\";q=10;w=60" ratelimit="\"default\";r=0;t=60" retry-after=""`)

	// Cost 0 charges nothing: the key keeps what the checks left it.
	e.do("GET", "192.0.2.3", "1", "X-Usage", "0")
	check(t, "after a cost of 0", e.do("GET", "192.0.2.3", "1"),
		`200 "ok" policy="\"default\";q=10;w=60" ratelimit="\"default\";r=8;t=12" retry-after=""`)

	// The status reaches the function: a 503 is not charged here.
	check(t, "503", e.do("GET", "192.0.2.4", "1", "X-Usage", "50", "X-Status", "503"),
		`503 "ok" policy="\"default\";q=10;w=60" ratelimit="\"default\";r=9;t=6" retry-after=""`)
	check(t, "after the 503", e.do("GET", "192.0.2.4", "1"),
		`200 "ok" policy="\"default\";q=10;w=60" ratelimit="\"default\";r=8;t=12" retry-after=""`)
	assert.Equal(t, []int{200, 200, 200, 200, 503, 200}, u.seen(), "the statuses the function saw")
}

// chargeStore is a local store whose backend fails every charge.
type chargeStore struct{ *local.Store }

func (s chargeStore) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	if req.Charge {
		return algo.Decision{}, fmt.Errorf("%w: connection refused", store.ErrUnavailable)
	}
	return s.Store.Apply(ctx, key, a, req)
}

// chargeError: a charge that fails goes to the error handler, which can no longer change
// the response; under FailOpen, which answers the failure, it does not.
func chargeError(t *testing.T, a Adapter) {
	for _, tc := range []struct {
		policy limiter.FailurePolicy
		hook   bool
	}{{limiter.FailClosed, true}, {limiter.FailOpen, false}} {
		clk := clockx.NewFake(Epoch)
		st, err := local.New(local.WithClock(clk), local.WithSweepInterval(0))
		require.NoError(t, err)
		t.Cleanup(func() { _ = st.Close() })
		l, err := limiter.New(chargeStore{st}, algo.TokenBucket{Rate: 1, Burst: 10},
			limiter.WithClock(clk), limiter.WithFailurePolicy(tc.policy))
		require.NoError(t, err)

		var mu sync.Mutex
		var got []error
		hook := func(w http.ResponseWriter, r *http.Request, err error) {
			mu.Lock()
			got = append(got, err)
			mu.Unlock()
			w.Header().Set("X-Hook", "1")
			httplimit.DefaultErrorHandler(w, r, err)
		}
		e := a.mount(t, l, a.byIP(t), httplimit.WithErrorHandler(hook), httplimit.WithChargeAfter((&usage{}).charge))
		rec := e.do("GET", "192.0.2.1", "1", "X-Usage", "5")
		check(t, tc.policy.String(), rec, `200 "ok" policy="\"default\";q=10;w=10" ratelimit="\"default\";r=9;t=1" retry-after=""`)
		assert.Empty(t, rec.Header().Get("X-Hook"), "%s: the hook changed the response", tc.policy)

		mu.Lock()
		if tc.hook {
			require.Len(t, got, 1, tc.policy.String())
			assert.ErrorIs(t, got[0], store.ErrUnavailable)
			assert.Contains(t, got[0].Error(), "charging 5 after the response")
		} else {
			assert.Empty(t, got, "%s answers the failure: no error for the hook", tc.policy)
		}
		mu.Unlock()
	}
}
