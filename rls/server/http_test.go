package server

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHTTPEndpoints(t *testing.T) {
	t.Parallel()
	ts := startLocal(t, "domain: d\ndescriptors:\n  - key: one_per_minute\n    rate_limit: {unit: minute, requests_per_unit: 1}\n", Options{})
	ts.alignTo(time.Minute)
	web := NewHTTP(ts.svc)
	srv := httptest.NewServer(web.Handler())
	defer srv.Close()
	post := func(body string) (int, string) {
		resp, err := http.Post(srv.URL+"/json", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	body := `{"domain":"d","descriptors":[{"entries":[{"key":"one_per_minute","value":"x"}]}]}`
	if code, out := post(body); code != 200 || !strings.Contains(out, `"overallCode":"OK"`) || !strings.Contains(out, `"requestsPerUnit":1`) {
		t.Fatalf("first /json: %d %s", code, out)
	}
	if code, out := post(body); code != 429 || !strings.Contains(out, `"overallCode":"OVER_LIMIT"`) {
		t.Fatalf("second /json: %d %s", code, out)
	}
	if code, _ := post(`{"domain":`); code != 400 {
		t.Fatalf("bad JSON: %d, want 400", code)
	}
	if code, _ := post(`{"domain":"d"}`); code != 400 {
		t.Fatalf("no descriptors: %d, want 400", code)
	}
	get := func(path string) (int, string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/json"); code != 405 {
		t.Fatalf("GET /json: %d", code)
	}
	_, metrics := get("/metrics")
	for _, want := range []string{
		"ratekitd_requests_total 2\n",
		`ratekitd_rule_total_hits_total{rule="d.one_per_minute"} 2`,
		`ratekitd_rule_over_limit_total{rule="d.one_per_minute"} 1`,
		`ratekitd_decisions_total{outcome="denied"} 1`,
		"ratekitd_store_latency_seconds_count 2\n",
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, metrics)
		}
	}
	if code, _ := get("/healthcheck"); code != 200 {
		t.Fatalf("healthcheck: %d", code)
	}
	web.Drain()
	if code, _ := get("/healthcheck"); code != 500 {
		t.Fatalf("healthcheck while draining: %d, want 500", code)
	}
}

func TestResponseHeaders(t *testing.T) {
	t.Parallel()
	cfg := "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {name: per_a, unit: minute, requests_per_unit: 2}\n  - key: b\n    rate_limit: {unit: hour, requests_per_unit: 100}\n"
	ts := startLocal(t, cfg, Options{Headers: true})
	ts.alignTo(time.Hour)
	ts.clock.Add(30 * time.Second)
	r := ts.call(t, "d", 0, desc("a", "x"), desc("b", "y"))
	h := map[string]string{}
	for _, hv := range r.ResponseHeadersToAdd {
		h[hv.Key] = hv.Value
	}
	if got, want := h["RateLimit-Policy"], `"per_a";q=2;w=60, "d.b";q=100;w=3600`; got != want {
		t.Fatalf("RateLimit-Policy %q, want %q", got, want)
	}
	if got, want := h["RateLimit"], `"per_a";r=1;t=30, "d.b";r=99;t=3570`; got != want {
		t.Fatalf("RateLimit %q, want %q", got, want)
	}
	if _, ok := h["Retry-After"]; ok {
		t.Fatal("Retry-After on an allowed request")
	}
	ts.call(t, "d", 0, desc("a", "x"))
	r = ts.call(t, "d", 0, desc("a", "x"))
	for _, hv := range r.ResponseHeadersToAdd {
		h[hv.Key] = hv.Value
	}
	if r.OverallCode != over || h["Retry-After"] != "30" {
		t.Fatalf("over the limit: %v, Retry-After %q, want 30", r.OverallCode, h["Retry-After"])
	}
}

// On a denial the IETF RateLimit t of the denied policy is its Retry-After (the draft's
// Section 6, as httplimit sends it): a token bucket's key is fresh only when full (60 s),
// but the request passes again in 1 s.
func TestDenialTIsRetryAfter(t *testing.T) {
	t.Parallel()
	ts := startLocal(t, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {name: tb, rate: 60/min, algorithm: token-bucket}\n", Options{Headers: true, DenialsSpendNothing: true})
	ts.call(t, "d", 60, desc("k", "x"))
	r := ts.call(t, "d", 0, desc("k", "x"))
	h := map[string]string{}
	for _, hv := range r.ResponseHeadersToAdd {
		h[hv.Key] = hv.Value
	}
	if r.OverallCode != over || h["Retry-After"] != "1" || h["RateLimit"] != `"tb";r=0;t=1` {
		t.Fatalf("denied: %v, headers %q; want Retry-After 1 and t=1", r.OverallCode, h)
	}
}

// envoyproxy/ratelimit's LIMIT_RESPONSE_HEADERS_ENABLED sends the limit, the remaining
// count and the seconds to the reset of the descriptor closest to its limit (one over its
// limit wins), under names that LIMIT_*_HEADER may change.
func TestReferenceHeaders(t *testing.T) {
	t.Parallel()
	cfg := "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: minute, requests_per_unit: 10}\n  - key: b\n    rate_limit: {unit: hour, requests_per_unit: 3}\n"
	ts := startLocal(t, cfg, Options{ReferenceHeaders: true, ReferenceHeaderNames: ReferenceHeaderNames{Limit: "X-RateLimit-Limit", Remaining: "X-RateLimit-Remaining", Reset: "X-RateLimit-Reset"}})
	ts.alignTo(time.Hour)
	ts.clock.Add(90 * time.Second)
	r := ts.call(t, "d", 0, desc("a", "x"), desc("b", "y"))
	got := ""
	for _, hv := range r.ResponseHeadersToAdd {
		got += hv.Key + ": " + hv.Value + "\n"
	}
	if want := "X-RateLimit-Limit: 3\nX-RateLimit-Remaining: 2\nX-RateLimit-Reset: 3510\n"; got != want {
		t.Fatalf("headers\n%s want\n%s", got, want)
	}
	def := startLocal(t, cfg, Options{ReferenceHeaders: true})
	def.alignTo(time.Minute)
	r = def.call(t, "d", 11, desc("a", "x"))
	got = ""
	for _, hv := range r.ResponseHeadersToAdd {
		got += hv.Key + ": " + hv.Value + "\n"
	}
	if want := "RateLimit-Limit: 10\nRateLimit-Remaining: 0\nRateLimit-Reset: 60\n"; got != want {
		t.Fatalf("default names, over the limit: headers\n%s want\n%s", got, want)
	}
}
