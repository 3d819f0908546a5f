package httplimit_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/adaptive"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
)

// lines returns every field line of name, in order: the headers as a client reads them.
func lines(rec *httptest.ResponseRecorder, name string) []string {
	return rec.Result().Header.Values(name)
}

// newComposite returns limiter.All of a 5-per-second token bucket (unnamed) and a named
// 100-per-minute window over one local store on a fake clock at epoch.
func newComposite(t *testing.T) *limiter.Limiter {
	t.Helper()
	clk := clockx.NewFake(epoch)
	st := teststore.Local(t, local.WithClock(clk), local.WithSweepInterval(0))
	t.Cleanup(func() { _ = st.Close() })
	burst, err := limiter.New(st, algo.TokenBucket{Rate: 5, Burst: 5}, limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	minute, err := limiter.New(st, algo.Named(algo.FixedWindow{Limit: 100, Window: time.Minute}, "per-minute"), limiter.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	all, err := limiter.All(burst, minute)
	if err != nil {
		t.Fatal(err)
	}
	return all
}

func TestCompositeHeadersOneItemPerRule(t *testing.T) {
	t.Parallel()
	l := newComposite(t)
	h := mustMiddleware(t, l, mustByIP(t))(&counter{})

	rec := get(h, "192.0.2.1:1")
	wantPolicy := []string{`"tb-5-1s";q=5;w=1`, `"per-minute";q=100;w=60`}
	if got := lines(rec, "RateLimit-Policy"); !slices.Equal(got, wantPolicy) {
		t.Errorf("RateLimit-Policy = %q, want %q", got, wantPolicy)
	}
	if got, want := lines(rec, "RateLimit"), []string{`"tb-5-1s";r=4;t=1`, `"per-minute";r=99;t=60`}; !slices.Equal(got, want) {
		t.Errorf("RateLimit = %q, want %q", got, want)
	}
	for range 4 {
		get(h, "192.0.2.1:1")
	}
	rec = get(h, "192.0.2.1:1") // the bucket is empty; the window would grant
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("sixth request: %d Retry-After %q, want 429 and 1", rec.Code, rec.Header().Get("Retry-After"))
	}
	// The window's t is capped by Retry-After (Section 6): within 1 s at most 95 are left.
	if got, want := lines(rec, "RateLimit"), []string{`"tb-5-1s";r=0;t=1`, `"per-minute";r=95;t=1`}; !slices.Equal(got, want) {
		t.Errorf("denied RateLimit = %q, want %q", got, want)
	}
	if got := lines(rec, "RateLimit-Policy"); !slices.Equal(got, wantPolicy) {
		t.Errorf("denied RateLimit-Policy = %q, want %q (stable)", got, wantPolicy)
	}
}

func TestCompositeNamesAndPrefix(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(epoch)
	st := teststore.Local(t, local.WithClock(clk), local.WithSweepInterval(0))
	user := func(k string) string { return "u:" + k }
	// Two rules that derive the same name (one per key function): the second falls back
	// to its position.
	a, _ := limiter.New(st, algo.FixedWindow{Limit: 10, Window: time.Minute}, limiter.WithClock(clk))
	b, _ := limiter.New(st, algo.FixedWindow{Limit: 10, Window: time.Minute}, limiter.WithClock(clk), limiter.WithKeyFunc(user))
	all, err := limiter.All(a, b)
	if err != nil {
		t.Fatal(err)
	}
	rec := get(mustMiddleware(t, all, mustByIP(t), httplimit.WithPolicyName("api"))(&counter{}), "192.0.2.1:1")
	if got, want := lines(rec, "RateLimit-Policy"), []string{`"api-fw-10-60s";q=10;w=60`, `"api-r2";q=10;w=60`}; !slices.Equal(got, want) {
		t.Errorf("RateLimit-Policy = %q, want %q", got, want)
	}
}

func TestCompositeSequentialDenialOmitsUnreachedRule(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(epoch)
	st1 := teststore.Local(t, local.WithClock(clk), local.WithSweepInterval(0))
	st2 := teststore.Local(t, local.WithClock(clk), local.WithSweepInterval(0))
	a, _ := limiter.New(st1, algo.FixedWindow{Limit: 1, Window: time.Second}, limiter.WithClock(clk))
	b, _ := limiter.New(st2, algo.FixedWindow{Limit: 10, Window: time.Minute}, limiter.WithClock(clk))
	all, err := limiter.All(a, b)
	if err != nil {
		t.Fatal(err)
	}
	h := mustMiddleware(t, all, mustByIP(t), httplimit.WithProblemDetails())(&counter{})
	get(h, "192.0.2.1:1")
	rec := get(h, "192.0.2.1:1")
	// The second store is not asked after the first rule denies: its policy is listed,
	// its current state is not (the draft's Appendix B.3.1 does the same).
	if got, want := lines(rec, "RateLimit-Policy"), []string{`"fw-1-1s";q=1;w=1`, `"fw-10-60s";q=10;w=60`}; !slices.Equal(got, want) {
		t.Errorf("RateLimit-Policy = %q, want %q", got, want)
	}
	if got, want := lines(rec, "RateLimit"), []string{`"fw-1-1s";r=0;t=1`}; !slices.Equal(got, want) {
		t.Errorf("RateLimit = %q, want %q", got, want)
	}
	checkProblem(t, rec, []string{"fw-1-1s"})
}

// checkProblem checks a 429 problem document naming violated.
func checkProblem(t *testing.T, rec *httptest.ResponseRecorder, violated []string) {
	t.Helper()
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Content-Type") != "application/problem+json" {
		t.Fatalf("got %d %q, want 429 application/problem+json", rec.Code, rec.Header().Get("Content-Type"))
	}
	var p struct {
		Type     string   `json:"type"`
		Title    string   `json:"title"`
		Status   int      `json:"status"`
		Violated []string `json:"violated-policies"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &p); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
	if p.Type != "https://iana.org/assignments/http-problem-types#quota-exceeded" || p.Status != 429 ||
		p.Title != "Too Many Requests" || !slices.Equal(p.Violated, violated) {
		t.Errorf("problem = %+v, want quota-exceeded, 429, violated %q", p, violated)
	}
}

func TestProblemDetails(t *testing.T) {
	t.Parallel()
	l, _ := newLimiter(t, algo.FixedWindow{Limit: 1, Window: time.Minute}, epoch)
	h := mustMiddleware(t, l, mustByIP(t), httplimit.WithProblemDetails())(&counter{})
	get(h, "192.0.2.1:1")
	rec := get(h, "192.0.2.1:1")
	checkProblem(t, rec, []string{"default"})
	if got := rec.Body.String(); got != `{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded","title":"Too Many Requests","status":429,"violated-policies":["default"]}` {
		t.Errorf("body = %s", got)
	}
	if rec.Header().Get("Retry-After") != "60" || rec.Header().Get("RateLimit") != `"default";r=0;t=60` {
		t.Errorf("headers: %v", summary(rec))
	}

	// A composite's atomic step asks every rule: each one that denied is named.
	all := newComposite(t)
	h = mustMiddleware(t, all, mustByIP(t), httplimit.WithProblemDetails())(&counter{})
	rec = get(h, "192.0.2.1:1", "X", "y")
	if rec.Code != http.StatusOK {
		t.Fatalf("first: %d", rec.Code)
	}
	mw := mustMiddleware(t, all, mustByIP(t), httplimit.WithProblemDetails(), httplimit.WithCost(func(*http.Request) int64 { return 200 }))
	checkProblem(t, get(mw(&counter{}), "192.0.2.1:1"), []string{"tb-5-1s", "per-minute"})

	// WithDeniedHandler after WithProblemDetails wins.
	plain := mustMiddleware(t, l, mustByIP(t), httplimit.WithProblemDetails(), httplimit.WithDeniedHandler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusTeapot)
	})))(&counter{})
	if rec := get(plain, "192.0.2.1:1"); rec.Code != http.StatusTeapot {
		t.Errorf("WithDeniedHandler after WithProblemDetails: %d, want 418", rec.Code)
	}
}

func TestQuotaUnitContentBytes(t *testing.T) {
	t.Parallel()
	l, _ := newLimiter(t, algo.TokenBucket{Rate: 1000, Burst: 65535}, epoch)
	size := func(r *http.Request) int64 { return max(r.ContentLength, 1) }
	h := mustMiddleware(t, l, mustByIP(t), httplimit.WithCost(size), httplimit.WithQuotaUnit("content-bytes"))(&counter{})
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(strings.Repeat("x", 1535)))
	req.RemoteAddr = "192.0.2.1:1"
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if got, want := rec.Header().Get("RateLimit-Policy"), `"default";q=65535;qu="content-bytes";w=66`; got != want {
		t.Errorf("RateLimit-Policy = %q, want %q", got, want)
	}
	if got, want := rec.Header().Get("RateLimit"), `"default";r=64000;t=2`; got != want {
		t.Errorf("RateLimit = %q, want %q", got, want)
	}
	// "requests" is the default unit: left out.
	rec = get(mustMiddleware(t, l, mustByIP(t), httplimit.WithQuotaUnit("requests"))(&counter{}), "192.0.2.2:1")
	if got := rec.Header().Get("RateLimit-Policy"); strings.Contains(got, "qu=") {
		t.Errorf("unit requests: %q, want no qu", got)
	}
	for _, bad := range []string{"", "Bytes", `a"b`, strings.Repeat("a", 65)} {
		if _, err := httplimit.Middleware(l, mustByIP(t), httplimit.WithQuotaUnit(bad)); !errors.Is(err, algo.ErrInvalidConfig) {
			t.Errorf("WithQuotaUnit(%q): %v, want ErrInvalidConfig", bad, err)
		}
	}
}

func TestPartitionKey(t *testing.T) {
	t.Parallel()
	l, _ := newLimiter(t, algo.FixedWindow{Limit: 10, Window: time.Minute}, epoch)
	secret := []byte("0123456789abcdef")
	h := mustMiddleware(t, l, mustByIP(t), httplimit.WithPartitionKey(secret))(&counter{})
	rec := get(h, "192.0.2.1:1")
	m := hmac.New(sha256.New, secret)
	m.Write([]byte("192.0.2.1"))
	pk := ":" + base64.StdEncoding.EncodeToString(m.Sum(nil)[:16]) + ":"
	if got, want := rec.Header().Get("RateLimit-Policy"), `"default";q=10;w=60;pk=`+pk; got != want {
		t.Errorf("RateLimit-Policy = %q, want %q", got, want)
	}
	if got, want := rec.Header().Get("RateLimit"), `"default";r=9;t=60;pk=`+pk; got != want {
		t.Errorf("RateLimit = %q, want %q", got, want)
	}
	if all := fmt.Sprint(rec.Header()); strings.Contains(all, "192.0.2.1") {
		t.Errorf("the key itself is in the headers: %s", all)
	}
	if other := get(h, "192.0.2.2:1").Header().Get("RateLimit"); strings.HasSuffix(other, pk) {
		t.Errorf("another key has the same pk: %q", other)
	}
	if _, err := httplimit.Middleware(l, mustByIP(t), httplimit.WithPartitionKey([]byte("short"))); !errors.Is(err, algo.ErrInvalidConfig) {
		t.Errorf("short secret: %v, want ErrInvalidConfig", err)
	}
}

func TestConcurrencyHeaders(t *testing.T) {
	t.Parallel()
	l, _ := newAdaptive(t, adaptive.Fixed{Limit: 2})
	entered, release := make(chan struct{}), make(chan struct{})
	h := mustConcurrency(t, l)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			entered <- struct{}{}
			<-release
		}
	}))
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- serve(h, httptest.NewRequest(http.MethodGet, "/slow", nil)) }()
	<-entered
	go func() { done <- serve(h, httptest.NewRequest(http.MethodGet, "/slow", nil)) }()
	<-entered
	shed := serve(h, httptest.NewRequest(http.MethodGet, "/", nil))
	close(release)
	first, second := <-done, <-done
	const policy = `"concurrency";q=2;qu="concurrent-requests"`
	if got := first.Header().Get("RateLimit-Policy"); got != policy {
		t.Errorf("RateLimit-Policy = %q, want %q", got, policy)
	}
	if r := []string{first.Header().Get("RateLimit"), second.Header().Get("RateLimit")}; !slices.Contains(r, `"concurrency";r=1`) || !slices.Contains(r, `"concurrency";r=0`) {
		t.Errorf("RateLimit of the two admitted = %q, want r=1 and r=0", r)
	}
	if shed.Code != http.StatusServiceUnavailable || shed.Header().Get("RateLimit") != `"concurrency";r=0` || shed.Header().Get("RateLimit-Policy") != policy {
		t.Errorf("shed: %d %q %q", shed.Code, shed.Header().Get("RateLimit-Policy"), shed.Header().Get("RateLimit"))
	}
	off := serve(mustConcurrency(t, l, httplimit.WithoutHeaders())(http.NotFoundHandler()), httptest.NewRequest(http.MethodGet, "/", nil))
	if off.Header().Get("RateLimit") != "" || off.Header().Get("RateLimit-Policy") != "" {
		t.Errorf("WithoutHeaders(): %v", off.Header())
	}
	named := serve(mustConcurrency(t, l, httplimit.WithPolicyName("inflight"))(http.NotFoundHandler()), httptest.NewRequest(http.MethodGet, "/", nil))
	if got := named.Header().Get("RateLimit"); got != `"inflight";r=1` {
		t.Errorf("WithPolicyName(\"inflight\"): %q", got)
	}
}

// In wait mode a composite's request reserves through every rule: each rule's item
// describes its own reservation.
func TestCompositeWait(t *testing.T) {
	t.Parallel()
	l := newComposite(t)
	h := mustMiddleware(t, l, mustByIP(t), httplimit.WithWait(time.Second))(&counter{})
	for range 5 {
		get(h, "192.0.2.1:1")
	}
	// The bucket is empty; its next token comes in 200 ms, within the bound: the request
	// waits, then is served. After the wait the bucket is empty and full again 1 s later.
	rec := get(h, "192.0.2.1:1")
	if rec.Code != http.StatusOK {
		t.Fatalf("sixth request: %d, want 200 after a wait", rec.Code)
	}
	if got, want := lines(rec, "RateLimit"), []string{`"tb-5-1s";r=0;t=1`, `"per-minute";r=94;t=60`}; !slices.Equal(got, want) {
		t.Errorf("RateLimit = %q, want %q", got, want)
	}
}
