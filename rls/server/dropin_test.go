package server

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ratekit/limiter/algo"
)

// startFixture serves one of testdata/dropin's files on a local store.
func startFixture(tb testing.TB, name string, o Options) *testServer {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "dropin", name))
	if err != nil {
		tb.Fatal(err)
	}
	return startLocal(tb, string(b), o)
}

// metricsText is the service's /metrics page.
func (ts *testServer) metricsText(tb testing.TB) string {
	tb.Helper()
	var b bytes.Buffer
	if _, err := ts.svc.Metrics().WriteTo(&b); err != nil {
		tb.Fatal(err)
	}
	return b.String()
}

// wantMetrics fails the test, saying when, for each line of wants the /metrics page lacks,
// and returns the page.
func (ts *testServer) wantMetrics(tb testing.TB, when string, wants ...string) string {
	tb.Helper()
	m := ts.metricsText(tb)
	for _, want := range wants {
		if !strings.Contains(m, want) {
			tb.Errorf("%s, the metrics lack %s:\n%s", when, want, m)
		}
	}
	return m
}

// envoyproxy/ratelimit's README: "Value supports wildcard matching using *, which can
// appear at any position — trailing, middle, or multiple times. Each * matches zero or
// more characters." Key and value are tried first, then the wildcards in file order, then
// the key alone.
func TestWildcardsAnywhereInAValue(t *testing.T) {
	t.Parallel()
	ts := startFixture(t, "wildcards.yaml", Options{})
	for _, tc := range []struct {
		entries []string
		limit   uint32 // 0: no rule matches
	}{
		{[]string{"trailing", "img"}, 20},
		{[]string{"trailing", "img/a.png"}, 20},
		{[]string{"trailing", "im"}, 0},
		{[]string{"middle", "az"}, 20},
		{[]string{"middle", "a-to-z"}, 20},
		{[]string{"middle", "a-to-y"}, 0},
		{[]string{"middle", "z"}, 0},
		{[]string{"several", "/api/v1/items/42/edit"}, 10},
		{[]string{"several", "/api//items//edit"}, 10},
		{[]string{"several", "/api/v1/items/42/view"}, 0},
		{[]string{"several", "/api/v1/edit"}, 0},
		{[]string{"order", "xy"}, 3},   // key and value first
		{[]string{"order", "x--y"}, 1}, // then the first wildcard of the file that matches
		{[]string{"order", "-y"}, 2},
		{[]string{"parent", "p", "child", "cod"}, 20},
		{[]string{"parent", "p", "child", "co"}, 0},
	} {
		r := ts.call(t, "wild", 0, desc(tc.entries...))
		if got := r.Statuses[0].GetCurrentLimit().GetRequestsPerUnit(); got != tc.limit {
			t.Errorf("%v: limit %d, want %d", tc.entries, got, tc.limit)
		}
	}
}

// envoyproxy/ratelimit's README: with share_threshold, "all matching values share the same
// cache key and rate limit counter"; without it "each matching value has its own isolated
// threshold". value_to_metric includes the request's value in the metric key where the
// config has none; with share_threshold the metric key keeps the wildcard.
func TestShareThresholdAndValueToMetric(t *testing.T) {
	t.Parallel()
	ts := startFixture(t, "share.yaml", Options{})
	for _, v := range []string{"docs/a", "docs/b", "docs/c"} {
		if r := ts.call(t, "share", 0, desc("file", v)); r.OverallCode != ok {
			t.Fatalf("%s: %v", v, r)
		}
	}
	if r := ts.call(t, "share", 0, desc("file", "docs/d")); r.OverallCode != over {
		t.Fatalf("a fourth docs/* value within the shared 3: %v, want OVER_LIMIT", r)
	}
	for _, v := range []string{"tmp/a", "tmp/a", "tmp/a", "tmp/b"} {
		if r := ts.call(t, "share", 0, desc("file", v)); r.OverallCode != ok {
			t.Fatalf("tmp/* counts each value apart: %s got %v", v, r)
		}
	}
	ts.call(t, "share", 0, desc("user", "alice"))
	ts.call(t, "share", 0, desc("path", "v1/x"))
	ts.wantMetrics(t, "after the calls",
		`ratekitd_rule_total_hits_total{rule="share.file_docs/*"} 4`,
		`ratekitd_rule_total_hits_total{rule="share.file_tmp/*"} 4`,
		`ratekitd_rule_total_hits_total{rule="share.user_alice"} 1`,
		`ratekitd_rule_total_hits_total{rule="share.path_v1/x"} 1`)
	dir := t.TempDir()
	writeFile(t, dir, "c.yaml", "domain: d\ndescriptors:\n  - key: k\n    value: v\n    share_threshold: true\n")
	if _, err := Load(dir); !errors.Is(err, algo.ErrInvalidConfig) || !strings.Contains(err.Error(), "share_threshold") {
		t.Fatalf("share_threshold without a wildcard: %v, want refused as envoyproxy/ratelimit refuses it", err)
	}
}

// envoyproxy/ratelimit refuses a rule whose replaces names the rule itself ("replaces
// should not contain name of same descriptor"), reads a null descriptors list as an empty
// one, ignores a requests_per_unit beside unlimited: true, and reads the first YAML
// document of a file only (one yaml.Unmarshal).
func TestLoadingAsTheReference(t *testing.T) {
	t.Parallel()
	if _, err := Load(filepath.Join("testdata", "dropin", "replaces_self.yaml")); !errors.Is(err, algo.ErrInvalidConfig) || !strings.Contains(err.Error(), `replaces its own rule "mine"`) {
		t.Fatalf("replaces naming its own rule: %v", err)
	}
	cfg, err := Load(filepath.Join("testdata", "dropin", "loading.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Domains(); len(got) != 1 || got[0] != "first" {
		t.Fatalf("domains %v, want the first document's only", got)
	}
	ign := cfg.Ignored()
	if len(ign) != 1 || !strings.Contains(ign[0], `(domain "second")`) || !strings.Contains(ign[0], `(domain "third")`) {
		t.Fatalf("Ignored() = %q, want one line naming both later documents", ign)
	}
	var logs bytes.Buffer
	LogIgnored(slog.New(slog.NewTextHandler(&logs, nil)), cfg)
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "loading.yaml") {
		t.Fatalf("log %q, want a warning naming the file", logs.String())
	}
	if _, err := Load(writeFile(t, t.TempDir(), "null.yaml", "domain: d\ndescriptors:\n")); err != nil {
		t.Fatalf("a null top-level descriptors list: %v", err)
	}
	ts := startFixture(t, "loading.yaml", Options{})
	r := ts.call(t, "first", 0, desc("open", "x"), desc("empty", "x"))
	if r.OverallCode != ok || r.Statuses[0].LimitRemaining != 1<<32-1 || r.Statuses[1].CurrentLimit != nil {
		t.Fatalf("%v: want unlimited, then no limit", r)
	}
	if r := ts.call(t, "second", 0, desc("k", "v"), desc("k", "v")); r.OverallCode != ok {
		t.Fatalf("the ignored second document limits: %v", r)
	}
}
