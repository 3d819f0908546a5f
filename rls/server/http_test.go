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
