package limiter_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/internal/storecheck"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
	"github.com/stretchr/testify/require"
)

// flakyMulti is a flakyStore over a local store that also applies several rules at once,
// failing the same way.
type flakyMulti struct {
	*flakyStore
	multi  *local.Store
	multis int
}

func (s *flakyMulti) ApplyAll(ctx context.Context, key string, rules []algo.Algorithm, req algo.Request) ([]algo.Decision, bool, error) {
	s.multis++
	if err := storecheck.ApplyAll(key, rules, req); err != nil {
		return nil, false, err
	}
	if err := s.fail(ctx); err != nil {
		return nil, false, err
	}
	return s.multi.ApplyAll(ctx, key, rules, req)
}

func newFlakyMulti(t *testing.T, clk clockx.Clock) *flakyMulti {
	t.Helper()
	st := newLocal(t, clk)
	return &flakyMulti{flakyStore: &flakyStore{Store: st}, multi: st}
}

// TestAllFailClosedRefunds: the second rule's store is down and fails closed; the first
// rule's grant is refunded and the request fails with the store's error.
func TestAllFailClosedRefunds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clockx.NewFake(start)
	h := &handlerLog{}
	healthy := mustNew(t, newLocal(t, clk), algo.FixedWindow{Limit: 5, Window: time.Minute}, limiter.WithClock(clk))
	down := &flakyStore{Store: newLocal(t, clk)}
	down.down.Store(true)
	failing := mustNew(t, down, algo.TokenBucket{Rate: 1, Burst: 5}, limiter.WithClock(clk), limiter.WithErrorHandler(h.handle))
	all := mustAll(t, healthy, failing)
	if d, err := all.Allow(ctx, "k"); d != (limiter.Decision{}) || !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Allow = %+v, %v; want a zero Decision and store.ErrUnavailable", d, err)
	}
	if r, err := all.Reserve(ctx, "k", 1, time.Second); r == nil || r.OK() || !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Reserve = %v, %v; want a reservation that is not OK and store.ErrUnavailable", r, err)
	}
	if err := all.Wait(ctx, "k"); !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("Wait = %v; want store.ErrUnavailable", err)
	}
	if ok, err := all.TryAcquire(ctx, "k", 1, time.Second); ok || !errors.Is(err, store.ErrUnavailable) {
		t.Errorf("TryAcquire = %v, %v; want false, store.ErrUnavailable", ok, err)
	}
	if got := allowN(t, healthy, "k", 1).Remaining; got != 4 {
		t.Errorf("healthy rule: %d left, want 4 (every grant refunded)", got)
	}
	if got := h.count(); got != 4 {
		t.Errorf("error handler called %d times, want 4", got)
	}
}

// TestAllFailOpenAndFallback: a rule whose store is down counts as granting under
// FailOpen (without figures) and is decided by its fallback under Fallback.
func TestAllFailOpenAndFallback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clockx.NewFake(start)
	healthy := mustNew(t, newLocal(t, clk), algo.FixedWindow{Limit: 5, Window: time.Minute}, limiter.WithClock(clk))
	down := &flakyStore{Store: newLocal(t, clk)}
	down.down.Store(true)
	open := mustNew(t, down, algo.TokenBucket{Rate: 1, Burst: 1}, limiter.WithFailurePolicy(limiter.FailOpen))
	all := mustAll(t, healthy, open)
	for i := 0; i < 2; i++ {
		d, err := all.Allow(ctx, "k")
		if !d.Allowed || d.Limit != 5 || d.Remaining != int64(4-i) || !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("FailOpen Allow %d = %+v, %v; want allowed with the healthy rule's figures and the error", i, d, err)
		}
	}

	fb := mustNew(t, newLocal(t, clk), algo.TokenBucket{Rate: 1, Burst: 1}, limiter.WithClock(clk))
	withFallback := mustNew(t, down, algo.GCRA{Rate: 10, Burst: 10}, limiter.WithFailurePolicy(limiter.Fallback(fb)))
	all2 := mustAll(t, healthy, withFallback)
	if d, err := all2.Allow(ctx, "f"); !d.Allowed || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Fallback first Allow = %+v, %v; want allowed by the fallback", d, err)
	}
	d, err := all2.Allow(ctx, "f")
	if d.Allowed || d.Limit != 1 || d.RetryAfter != time.Second || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Fallback second Allow = %+v, %v; want the fallback's denial", d, err)
	}
	if got := allowN(t, healthy, "f", 1).Remaining; got != 3 {
		t.Errorf("healthy rule: %d left, want 3 (the denied request refunded)", got)
	}
	// A reservation partly held by the fallback is cancelled in both stores.
	clk.Add(time.Second)
	r, err := all2.Reserve(ctx, "g", 1, time.Hour)
	if err == nil || !r.OK() {
		t.Fatalf("Reserve = %v, %v", r, err)
	}
	// The fallback's bucket of 1 is empty now: the next reservation waits for it.
	r, _ = all2.Reserve(ctx, "g", 1, time.Hour)
	if !r.OK() || r.Delay() != time.Second {
		t.Fatalf("Reserve with the fallback empty: OK %v Delay %v, want 1s", r.OK(), r.Delay())
	}
	if err := r.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if got := allowN(t, healthy, "g", 1).Remaining; got != 3 {
		t.Errorf("healthy rule after Cancel: %d left, want 3", got)
	}
}

// TestAllAtomicGroupFailure: rules sharing a store are applied in one ApplyAll; when it
// fails, each rule's policy answers, and every rule's circuit breaker counts the failure.
func TestAllAtomicGroupFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clockx.NewFake(start)
	st := newFlakyMulti(t, clk)
	h := &handlerLog{}
	opts := []limiter.Option{limiter.WithClock(clk), limiter.WithErrorHandler(h.handle)}
	a := mustNew(t, st, algo.FixedWindow{Limit: 3, Window: time.Second}, append(opts, limiter.WithFailurePolicy(limiter.FailOpen))...)
	b := mustNew(t, st, algo.TokenBucket{Rate: 1, Burst: 2},
		append(opts, limiter.WithFailurePolicy(limiter.FailOpen),
			limiter.WithCircuitBreaker(limiter.CircuitBreaker{MinCalls: 2, Window: time.Nanosecond, CoolDown: time.Minute}))...)
	all := mustAll(t, a, b)
	for i := 0; i < 2; i++ {
		if d := allowN(t, all, "k", 1); !d.Allowed {
			t.Fatalf("call %d: %+v", i, d)
		}
	}
	if d := allowN(t, all, "k", 1); d.Allowed || d.Limit != 2 {
		t.Fatalf("third call: %+v, want the bucket to deny", d)
	}
	if got := st.multis; got != 3 || st.applies.Load() != 0 {
		t.Errorf("%d ApplyAll and %d Apply calls, want 3 and 0: one atomic call per request", got, st.applies.Load())
	}
	st.down.Store(true)
	for i := 0; i < 3; i++ {
		d, err := all.Allow(ctx, "k")
		if !d.Allowed || !errors.Is(err, store.ErrUnavailable) {
			t.Fatalf("down, call %d: %+v %v; want FailOpen's grant", i, d, err)
		}
		if i == 1 {
			clk.Add(time.Nanosecond) // b's window of 1 ns ends after two failures
		}
	}
	// Two failures in b's window opened b's breaker: the third call did not reach the
	// store.
	if got := st.multis; got != 5 {
		t.Errorf("%d ApplyAll calls, want 5 (the breaker skipped the last)", got)
	}
	if _, err := all.Allow(ctx, "k"); !errors.Is(err, limiter.ErrCircuitOpen) {
		t.Errorf("with the breaker open: %v, want ErrCircuitOpen", err)
	}
	if h.count() < 5 {
		t.Errorf("error handler called %d times, want every failure reported", h.count())
	}
}

// TestAllMiddleware: httplimit.Middleware takes a composite as it is; a denial carries
// the largest RetryAfter.
func TestAllMiddleware(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(start)
	st := newLocal(t, clk)
	all := mustAll(t,
		mustNew(t, st, algo.TokenBucket{Rate: 1, Burst: 2}, limiter.WithClock(clk)),
		mustNew(t, st, algo.FixedWindow{Limit: 2, Window: 10 * time.Second}, limiter.WithClock(clk)))
	key, err := httplimit.ByHeader("X-Key")
	if err != nil {
		t.Fatal(err)
	}
	mw, err := httplimit.Middleware(all, key)
	if err != nil {
		t.Fatal(err)
	}
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	var codes []int
	var retry, policies []string
	for i := 0; i < 3; i++ {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Header.Set("X-Key", "k")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		codes = append(codes, rec.Code)
		retry = append(retry, rec.Header().Get("Retry-After"))
		policies = append(policies, strings.Join(rec.Header().Values("RateLimit-Policy"), ", ")+" | "+strings.Join(rec.Header().Values("RateLimit"), ", "))
	}
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 429 || retry[2] != "10" {
		t.Errorf("codes %v, Retry-After %q; want 200 200 429 and 10 (the window's, not the bucket's 1)", codes, retry)
	}
	// One item per rule, with each rule's own figures (named after the rule); on the
	// denial both rules denied, each with its own retry time.
	const policy = `"tb-2-2s";q=2;w=2, "fw-2-10s";q=2;w=10 | `
	want := []string{policy + `"tb-2-2s";r=1;t=1, "fw-2-10s";r=1;t=10`, policy + `"tb-2-2s";r=0;t=2, "fw-2-10s";r=0;t=10`,
		policy + `"tb-2-2s";r=0;t=1, "fw-2-10s";r=0;t=10`}
	for i := range want {
		if policies[i] != want[i] {
			t.Errorf("response %d: RateLimit-Policy and RateLimit %q, want %q", i+1, policies[i], want[i])
		}
	}
}

// listErr is a store failure whose type == cannot compare (it holds a slice).
type listErr struct{ causes []string }

func (e listErr) Error() string { return "store down: " + strings.Join(e.causes, ", ") }
func (e listErr) Unwrap() error { return store.ErrUnavailable }

// TestAllFailOpenIncomparableErrors: two rules whose stores both fail with an error type
// == cannot compare, each answered by FailOpen: the composite grants and returns both
// failures joined, where joining them compared the two and panicked.
func TestAllFailOpenIncomparableErrors(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(start)
	var rules []*limiter.Limiter
	for i := 0; i < 2; i++ {
		st := &flakyStore{Store: newLocal(t, clk)}
		var e error = listErr{causes: []string{"refused"}}
		st.other.Store(&e)
		rules = append(rules, mustNew(t, st, algo.FixedWindow{Limit: 5, Window: time.Minute},
			limiter.WithClock(clk), limiter.WithFailurePolicy(limiter.FailOpen)))
	}
	c, err := limiter.All(rules...)
	require.NoError(t, err)
	d, err := c.Allow(context.Background(), "k")
	require.True(t, d.Allowed, "FailOpen grants")
	require.ErrorIs(t, err, store.ErrUnavailable)
	var le listErr
	require.ErrorAs(t, err, &le)
}
