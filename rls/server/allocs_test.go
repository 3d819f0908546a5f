package server

import (
	"context"
	"strings"
	"testing"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/local"
)

// The limiter key is the name of the count in the store: a Redis key written by an
// earlier release must be found again, so the format stays byte for byte the one of the
// strings.Replacer it replaced.
func TestLimiterKeyFormat(t *testing.T) {
	t.Parallel()
	old := strings.NewReplacer("%", "%25", "|", "%7C", "=", "%3D")
	oldKey := func(domain string, entries []entry) string {
		k := old.Replace(domain)
		for _, e := range entries {
			k += "|" + old.Replace(e.key) + "=" + old.Replace(e.value)
		}
		return k
	}
	assert.Equal(t, "bench|user=42", limiterKey("bench", []entry{{"user", "42"}}))
	assert.Equal(t, "d%7Cx|a%3Db=c%25%7C%3D|k=", limiterKey("d|x", []entry{{"a=b", "c%|="}, {"k", ""}}))
	parts := []string{"", "a", "%", "|", "=", "%7C", "é|=%", "x=y|z", "\xff|", "user"}
	for _, d := range parts {
		for _, k := range parts {
			for _, v := range parts {
				entries := []entry{{k, v}, {v, k}}
				require.Equal(t, oldKey(d, entries), limiterKey(d, entries), "domain %q key %q value %q", d, k, v)
			}
		}
	}
}

// A decision of one descriptor on a known key allocates its key string and its response,
// nothing else: the checks and entries come from a pool, the Limiter is remembered on the
// rule, the statistics path on the rule too when it names no request value.
func TestShouldRateLimitAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	for _, c := range []struct {
		name, yaml string
		most       float64
	}{
		{"rule", "domain: d\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 1000000000}\n", 2},
		{"nested", "domain: d\ndescriptors:\n  - key: user\n    descriptors:\n      - key: path\n        value: /a\n        rate_limit: {unit: hour, requests_per_unit: 1000000000}\n", 2},
		// detailed_metric names the request's value: its path is built per call.
		{"detailed", "domain: d\ndescriptors:\n  - key: user\n    detailed_metric: true\n    rate_limit: {unit: hour, requests_per_unit: 1000000000}\n", 3},
		{"no rule", "domain: d\ndescriptors:\n  - key: other\n    rate_limit: {unit: hour, requests_per_unit: 1}\n", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, _ := loadConfig(t, c.yaml)
			st, err := local.New(local.WithClock(clockx.NewFake(epochDay)))
			require.NoError(t, err)
			t.Cleanup(func() { st.Close() })
			svc, err := New(cfg, st, Options{Clock: clockx.NewFake(epochDay)})
			require.NoError(t, err)
			req := &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("user", "alice", "path", "/a")}}
			if c.name != "nested" {
				req.Descriptors[0] = desc("user", "alice")
			}
			ctx := context.Background()
			_, err = svc.ShouldRateLimit(ctx, req) // the key's entry, the rule's caches
			require.NoError(t, err)
			got := testing.AllocsPerRun(100, func() {
				if _, err := svc.ShouldRateLimit(ctx, req); err != nil {
					t.Fatal(err)
				}
			})
			assert.LessOrEqual(t, got, c.most)
		})
	}
}

// The statistics path a rule keeps is the one that names no request value: a rule whose
// path names the value (value_to_metric, detailed_metric, on a value-less or wildcard
// descriptor) counts each value under its own path, whatever value came first.
func TestRuleStatPathPerValue(t *testing.T) {
	t.Parallel()
	ts := startFixture(t, "share.yaml", Options{})
	for _, v := range []string{"alice", "bob", "bob"} {
		ts.call(t, "share", 0, desc("user", v))
	}
	for _, v := range []string{"v1/x", "v1/y"} {
		ts.call(t, "share", 0, desc("path", v))
	}
	for _, v := range []string{"tmp/a", "tmp/b"} {
		ts.call(t, "share", 0, desc("file", v))
	}
	ts.wantMetrics(t, "after the calls",
		`ratekitd_rule_total_hits_total{rule="share.user_alice"} 1`,
		`ratekitd_rule_total_hits_total{rule="share.user_bob"} 2`,
		`ratekitd_rule_total_hits_total{rule="share.path_v1/x"} 1`,
		`ratekitd_rule_total_hits_total{rule="share.path_v1/y"} 1`,
		`ratekitd_rule_total_hits_total{rule="share.file_tmp/*"} 2`)

	cfg, _ := loadConfig(t, "domain: d\ndescriptors:\n  - key: user\n    detailed_metric: true\n    rate_limit: {unit: minute, requests_per_unit: 5}\n")
	st, err := local.New()
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	svc, err := New(cfg, st, Options{})
	require.NoError(t, err)
	for _, v := range []string{"a", "b"} {
		_, err := svc.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("user", v)}})
		require.NoError(t, err)
	}
	var b strings.Builder
	_, err = svc.Metrics().WriteTo(&b)
	require.NoError(t, err)
	assert.Contains(t, b.String(), `ratekitd_rule_total_hits_total{rule="d.user_a"} 1`)
	assert.Contains(t, b.String(), `ratekitd_rule_total_hits_total{rule="d.user_b"} 1`)
}

// A response is the caller's: the memory the service reuses (its pooled checks and
// entries) is never part of it, so a later call changes nothing in an earlier answer.
func TestResponsesAreNotReused(t *testing.T) {
	t.Parallel()
	cfg, _ := loadConfig(t, "domain: d\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 2}\n  - key: team\n    rate_limit: {unit: hour, requests_per_unit: 7, unit_multiplier: 2}\n")
	clk := clockx.NewFake(epochDay)
	st, err := local.New(local.WithClock(clk))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	for _, concurrent := range []bool{false, true} {
		svc, err := New(cfg, st, Options{Clock: clk, Concurrent: concurrent})
		require.NoError(t, err)
		ctx := context.Background()
		one, err := svc.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("user", "u1")}})
		require.NoError(t, err)
		two, err := svc.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("team", "t1"), desc("user", "u2"), desc("nobody", "x")}})
		require.NoError(t, err)
		wantOne, wantTwo := proto.Clone(one), proto.Clone(two)
		for range 5 {
			_, err := svc.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("team", "t2"), desc("user", "u1")}})
			require.NoError(t, err)
			_, err = svc.ShouldRateLimit(ctx, &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("team", "t3")}})
			require.NoError(t, err)
		}
		assert.True(t, proto.Equal(wantOne, one), "concurrent %v: %v changed to %v", concurrent, wantOne, one)
		assert.True(t, proto.Equal(wantTwo, two), "concurrent %v: %v changed to %v", concurrent, wantTwo, two)
		require.Len(t, two.Statuses, 3)
		assert.Equal(t, uint32(7), two.Statuses[0].GetCurrentLimit().GetRequestsPerUnit())
		assert.Equal(t, uint32(2), two.Statuses[0].GetCurrentLimit().GetUnitMultiplier().GetValue())
		assert.Nil(t, two.Statuses[1].GetCurrentLimit().GetUnitMultiplier())
		assert.Nil(t, two.Statuses[2].GetCurrentLimit())
		assert.NotNil(t, two.Statuses[1].GetDurationUntilReset())
	}
}

// Two Services may read one Config: each decides a rule with its own Limiter, over its
// own store, and counts it in its own Metrics, whichever of them last remembered its
// Limiter and counters on the rule.
func TestServicesSharingAConfig(t *testing.T) {
	t.Parallel()
	cfg, _ := loadConfig(t, "domain: d\ndescriptors:\n  - key: user\n    rate_limit: {unit: minute, requests_per_unit: 1}\n")
	clk := clockx.NewFake(epochDay)
	svcs := make([]*Service, 2)
	for i := range svcs {
		st, err := local.New(local.WithClock(clk))
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		svcs[i], err = New(cfg, st, Options{Clock: clk})
		require.NoError(t, err)
	}
	req := &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("user", "a")}}
	for i, svc := range svcs {
		r, err := svc.ShouldRateLimit(context.Background(), req)
		require.NoError(t, err)
		assert.Equal(t, ok, r.OverallCode, "service %d: its store has not counted the key", i)
	}
	r, err := svcs[0].ShouldRateLimit(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, over, r.OverallCode, "service 0's second call")
	for i, want := range []string{"2", "1"} {
		var b strings.Builder
		_, err := svcs[i].Metrics().WriteTo(&b)
		require.NoError(t, err)
		assert.Contains(t, b.String(), `ratekitd_rule_total_hits_total{rule="d.user"} `+want+"\n", "service %d counts its own calls", i)
	}
}
