package server

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
)

func TestLoadRefusesBadConfigNamingFileLineAndField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, yaml, want string
	}{
		{"unit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: minutes\n      requests_per_unit: 5\n",
			`:5: descriptors[0].rate_limit.unit: "minutes" is not one of`},
		{"unknown key", "domain: d\ndescriptors:\n  - key: k\n    rate_limt: {unit: second}\n",
			`:4: descriptors[0].rate_limt: unknown key`},
		{"no key", "domain: d\ndescriptors:\n  - value: v\n",
			`:3: descriptors[0].key: missing or empty`},
		{"no domain", "descriptors: []\n", `:1: domain: missing or empty`},
		{"negative", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: -1}\n",
			`:4: descriptors[0].rate_limit.requests_per_unit: want a whole number`},
		{"unlimited with unit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unlimited: true\n      unit: second\n",
			`:6: descriptors[0].rate_limit.unit: not allowed with unlimited`},
		{"no unit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      requests_per_unit: 5\n",
			`:5: descriptors[0].rate_limit.unit: missing`},
		{"bad rate", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {rate: 100/fortnight}\n",
			`:4: descriptors[0].rate_limit.rate: rate "100/fortnight": unknown period`},
		{"rate and unit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {rate: 1/s, unit: second}\n",
			`descriptors[0].rate_limit.unit: not allowed beside rate`},
		{"algorithm", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {rate: 1/s, algorithm: magic}\n",
			`:4: descriptors[0].rate_limit.algorithm: unknown algorithm "magic"`},
		{"burst on a window", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {rate: 1/s, burst: 3}\n",
			`descriptors[0].rate_limit.burst: only token-bucket`},
		{"duplicate", "domain: d\ndescriptors:\n  - key: k\n    value: v\n  - key: k\n    value: v\n",
			`:5: descriptors[1]: duplicate descriptor k=v`},
		{"nested", "domain: d\ndescriptors:\n  - key: a\n    descriptors:\n      - key: b\n        shadow_mode: maybe\n",
			`:6: descriptors[0].descriptors[0].shadow_mode: want true or false`},
		{"replaces", "domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      unit: second\n      replaces: [{nom: x}]\n",
			`:6: descriptors[0].rate_limit.replaces[0].nom: unknown key`},
		{"yaml syntax", "domain: d\ndescriptors:\n  - key: [\n", `yaml: line`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			p := writeFile(t, dir, "bad.yaml", tc.yaml)
			_, err := Load(dir)
			if !errors.Is(err, algo.ErrInvalidConfig) {
				t.Fatalf("err %v, want one wrapping ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %q, want it to name %s and say %q", err, p, tc.want)
			}
		})
	}
}

func TestLoadDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", "domain: a\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1}\n")
	writeFile(t, dir, "b.yml", "domain: b\n---\ndomain: c\n")
	writeFile(t, dir, ".hidden.yaml", "not: [valid")
	writeFile(t, dir, "notes.txt", "ignored")
	cfg, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(cfg.Domains()); got != 2 {
		t.Fatalf("domains %v, want a and b (c is b.yml's second document: ignored)", cfg.Domains())
	}
	writeFile(t, dir, "dup.yaml", "domain: a\n")
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), `domain "a" is also defined in `+filepath.Join(dir, "a.yaml")) {
		t.Fatalf("duplicate domain: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing")); !errors.Is(err, algo.ErrInvalidConfig) {
		t.Fatalf("missing path: %v", err)
	}
}

func TestParseRateReadsAlgoQuotasInEnvoyUnits(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]rate{
		"100/min":        {100, unitNames["minute"], 1},
		"5/10s":          {5, unitNames["second"], 10},
		"7/hours":        {7, unitNames["hour"], 1},
		"100 per minute": {100, unitNames["minute"], 1}, // algo.ParseQuota's forms
		"100-M":          {100, unitNames["minute"], 1},
		"3/14d":          {3, unitNames["week"], 2},
		"3/90s":          {3, unitNames["second"], 90},
		"3/5m":           {3, unitNames["minute"], 5},
		"1/30d":          {1, unitNames["month"], 1},
		"1/730d":         {1, unitNames["year"], 2},
	} {
		if got, err := parseRate(in); err != nil || got != want {
			t.Errorf("parseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	// What algo.ParseQuota refuses, and windows Envoy's units cannot name.
	for _, in := range []string{"", "100", "x/min", "-1/min", "0/day", "1/0s", "1/min/s", "99999999999/s", "1/fortnight", "100/500ms", "1/1500ms"} {
		if _, err := parseRate(in); err == nil {
			t.Errorf("parseRate(%q) succeeded", in)
		}
	}
}

func TestAlgorithmsAreAlgoNamesBuiltByFromQuota(t *testing.T) {
	t.Parallel()
	// algo's names, the long names kept as aliases, each built as algo.FromQuota builds it.
	for _, tc := range []struct{ value, name string }{
		{"fixed-window", "fixed-window"},
		{"sliding-log", "sliding-log"},
		{"sliding-window-log", "sliding-log"},
		{"sliding-counter", "sliding-counter"},
		{"sliding-window-counter", "sliding-counter"},
		{"token-bucket", "token-bucket"},
		{"gcra", "gcra"},
		{"leaky-bucket", "leaky-bucket"},
	} {
		cfg, _ := loadConfig(t, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {rate: 30/min, algorithm: "+tc.value+"}\n")
		r, _, _ := cfg.domains["d"].match([]entry{{"k", "v"}})
		want, err := algo.FromQuota(tc.name, algo.Quota{Limit: 30, Window: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if r == nil || r.Algorithm != want {
			t.Errorf("algorithm: %s built %v, want algo.FromQuota(%q, 30/m) = %v", tc.value, r, tc.name, want)
		}
	}
	// A burst beside the rate: burst permits earned back at the rule's rate.
	cfg, _ := loadConfig(t, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {rate: 60/min, algorithm: gcra, burst: 5}\n")
	r, _, _ := cfg.domains["d"].match([]entry{{"k", "v"}})
	if want, _ := algo.FromQuota("gcra", algo.Quota{Limit: 5, Window: 5 * time.Second}); r.Algorithm != want {
		t.Errorf("60/min with burst 5 built %v, want %v", r.Algorithm, want)
	}
	// An unknown name is refused with the list of names and their aliases.
	dir := t.TempDir()
	writeFile(t, dir, "c.yaml", "domain: d\nalgorithm: magic\n")
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "sliding-log (or sliding-window-log)") {
		t.Errorf("unknown algorithm: %v, want the list of names with their aliases", err)
	}
}

func TestLimiterKeyIsUnambiguous(t *testing.T) {
	t.Parallel()
	keys := map[string]string{}
	for _, c := range []struct {
		domain  string
		entries []entry
	}{
		{"d", []entry{{"a", "b|c=d"}}},
		{"d", []entry{{"a", "b"}, {"c", "d"}}},
		{"d|a=b", []entry{{"c", "d"}}},
		{"d", []entry{{"a=b", "c"}}},
		{"d", []entry{{"a", "b=c"}}},
		{"d", []entry{{"a", "%7C"}}},
		{"d", []entry{{"a", "|"}}},
		{"d", []entry{{"a", ""}}},
		{"d", nil},
	} {
		k := limiterKey(c.domain, c.entries)
		if prev, dup := keys[k]; dup {
			t.Fatalf("%v and %v share the key %q", prev, c, k)
		}
		keys[k] = fmt.Sprint(c)
	}
}
