package server

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// envoyproxy/ratelimit's global SHADOW_MODE: "If there is a global shadow_mode, it should
// always return OK" — the overall code only; each descriptor's status keeps OVER_LIMIT,
// and the rule's shadow_mode statistic is not counted (the rule is not in shadow mode).
func TestGlobalShadowKeepsStatuses(t *testing.T) {
	t.Parallel()
	ts := startLocal(t, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 1}\n", Options{Shadow: true})
	ts.alignTo(time.Minute)
	ts.call(t, "d", 0, desc("k", "v"))
	r := ts.call(t, "d", 0, desc("k", "v"), desc("k", "w"))
	if r.OverallCode != ok || r.Statuses[0].Code != over || r.Statuses[1].Code != ok {
		t.Fatalf("global shadow: %v, want overall OK with statuses OVER_LIMIT, OK", r)
	}
	ts.wantMetrics(t, "in global shadow mode", "ratekitd_global_shadow_mode_total 1", "ratekitd_over_limit_total 0", `ratekitd_rule_shadow_mode_total{rule="d.k"} 0`, `ratekitd_rule_over_limit_total{rule="d.k"} 1`)
}

// envoyproxy/ratelimit's quota_mode: "The final code is OVER_LIMIT iff at least one rate
// limit descriptor is over the limit or all quota descriptors are over the limit"; a quota
// descriptor over its limit keeps its OVER_LIMIT status. With RESPONSE_DYNAMIC_METADATA
// the metadata of the descriptors that passed comes back under "metadata".
func TestQuotaModeAndMetadata(t *testing.T) {
	t.Parallel()
	ts := startFixture(t, "quota.yaml", Options{DynamicMetadata: true})
	ts.alignTo(30 * 24 * time.Hour)
	r := ts.call(t, "quota", 0, desc("daily", "u"), desc("monthly", "u"))
	if r.OverallCode != ok {
		t.Fatalf("first call: %v", r)
	}
	md := r.GetDynamicMetadata().GetFields()["metadata"].GetStructValue().GetFields()
	if md["tier"].GetStringValue() != "gold" || len(md["caps"].GetListValue().GetValues()) != 2 {
		t.Fatalf("dynamic metadata %v, want the daily rule's", r.GetDynamicMetadata())
	}
	if got := r.GetDynamicMetadata().GetFields()["domain"].GetStringValue(); got != "quota" {
		t.Fatalf("dynamic metadata domain %q", got)
	}
	// The daily quota is spent, the monthly one is not: OK overall, the daily status over.
	r = ts.call(t, "quota", 0, desc("daily", "u"), desc("monthly", "u"))
	if r.OverallCode != ok || r.Statuses[0].Code != over || r.Statuses[1].Code != ok {
		t.Fatalf("one quota over: %v, want OK overall with statuses OVER_LIMIT, OK", r)
	}
	if _, has := r.GetDynamicMetadata().GetFields()["metadata"]; has {
		t.Fatalf("metadata of a rule over its limit was sent: %v", r.GetDynamicMetadata())
	}
	// Every quota over: OVER_LIMIT.
	if r := ts.call(t, "quota", 0, desc("daily", "u"), desc("monthly", "u")); r.OverallCode != over {
		t.Fatalf("all quotas over: %v, want OVER_LIMIT", r)
	}
	// A rule that is not a quota decides as usual beside a quota that passes.
	ts.call(t, "quota", 0, desc("plain", "u"))
	if r := ts.call(t, "quota", 0, desc("plain", "u"), desc("daily", "fresh")); r.OverallCode != over {
		t.Fatalf("a rule over beside a quota that passes: %v, want OVER_LIMIT", r)
	}
}

// envoyproxy/ratelimit's global QUOTA_MODE decides every descriptor in quota mode: a
// request is OVER_LIMIT only when all its descriptors are over their limits (a descriptor
// that matches no rule counts among them, and passes).
func TestGlobalQuotaMode(t *testing.T) {
	t.Parallel()
	ts := startLocal(t, "domain: d\ndescriptors:\n  - key: a\n    rate_limit: {unit: minute, requests_per_unit: 1}\n  - key: b\n    rate_limit: {unit: minute, requests_per_unit: 2}\n", Options{QuotaMode: true})
	ts.alignTo(time.Minute)
	ts.call(t, "d", 0, desc("a", "x"), desc("b", "x"))
	if r := ts.call(t, "d", 0, desc("a", "x"), desc("b", "x")); r.OverallCode != ok || r.Statuses[0].Code != over {
		t.Fatalf("one of two over: %v, want OK overall, the first status OVER_LIMIT", r)
	}
	if r := ts.call(t, "d", 0, desc("a", "x"), desc("b", "x")); r.OverallCode != over {
		t.Fatalf("both over: %v, want OVER_LIMIT", r)
	}
	if r := ts.call(t, "d", 0, desc("a", "x"), desc("none", "x")); r.OverallCode != ok {
		t.Fatalf("over beside a descriptor without a rule: %v, want OK", r)
	}
}

// flakyStore is a store that fails, as a Redis outage does, while down is set.
type flakyStore struct {
	store.Store
	down atomic.Bool
}

func (f *flakyStore) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	if f.down.Load() {
		return algo.Decision{}, fmt.Errorf("%w: test outage (connection refused)", store.ErrUnavailable)
	}
	return f.Store.Apply(ctx, key, a, req)
}

// syncBuffer is a bytes.Buffer for a logger written from the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// envoyproxy/ratelimit answers a store failure with an error and leaves the answer to
// Envoy's failure_mode_deny: the default. Outage answers are counted apart from the
// over-limit ones, the outage is logged once when it starts (with its cause) and once when
// it ends, and the breakers' states are exported.
func TestOutages(t *testing.T) {
	t.Parallel()
	const cfg = "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 100}\n"
	for _, tc := range []struct {
		policy Policy
		code   codes.Code                   // of the call during the outage
		answer rlsv3.RateLimitResponse_Code // when code is OK
		metric string                       // the outage answers' count
		overs  string                       // the requests counted over the limit
	}{
		{"", codes.Unavailable, 0, `ratekitd_outage_answers_total{code="error"} 4`, "ratekitd_over_limit_total 0"},
		{PolicyClosed, codes.OK, over, `ratekitd_outage_answers_total{code="OVER_LIMIT"} 4`, "ratekitd_over_limit_total 0"},
		{PolicyOpen, codes.OK, ok, `ratekitd_outage_answers_total{code="OK"} 4`, "ratekitd_over_limit_total 0"},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			t.Parallel()
			clk := clockx.NewFake(epochDay)
			mem, err := local.New(local.WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { mem.Close() })
			st := &flakyStore{Store: mem}
			var logs syncBuffer
			ts := startOn(t, cfg, st, Options{FailurePolicy: tc.policy, Clock: clk, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
				Breaker: limiter.CircuitBreaker{FailureRate: 0.5, MinCalls: 2, Window: time.Second, CoolDown: time.Hour}})
			key := "k" + string(tc.policy)
			st.down.Store(true)
			for i := range 4 {
				if i == 3 {
					clk.Add(time.Second) // the breaker's window ends: the next failure opens it
				}
				r, err := ts.client.ShouldRateLimit(t.Context(), &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("k", key)}})
				if status.Code(err) != tc.code || (err == nil && r.OverallCode != tc.answer) {
					t.Fatalf("during the outage: %v, %v; want code %v, answer %v", r, err, tc.code, tc.answer)
				}
			}
			m := ts.wantMetrics(t, "during the outage", tc.metric, tc.overs, "ratekitd_store_outage 1", `ratekitd_breakers{state="open"} 1`)
			if strings.Contains(m, `ratekitd_rule_over_limit_total{rule="d.k"} 4`) {
				t.Errorf("outage answers counted as over the limit:\n%s", m)
			}
			if n := strings.Count(logs.String(), "store outage started"); n != 1 || !strings.Contains(logs.String(), "connection refused") {
				t.Errorf("log %q, want one line for the outage's start with its cause", logs.String())
			}
			st.down.Store(false)
			clk.Add(time.Hour) // the breaker lets a probe through
			if r := ts.call(t, "d", 0, desc("k", key)); r.OverallCode != ok || r.Statuses[0].LimitRemaining != 99 {
				t.Fatalf("after the outage: %v", r)
			}
			ts.wantMetrics(t, "after the outage", "ratekitd_store_outage 0", `ratekitd_breakers{state="open"} 0`)
			if !strings.Contains(logs.String(), "store outage ended") || !strings.Contains(logs.String(), "duration=1h0m1s") {
				t.Errorf("log %q, want the outage's end with its duration", logs.String())
			}
		})
	}
}

// Bounds against hostile input: a request of more descriptors, or a descriptor of more
// entries, than the bounds is refused before any work.
func TestRequestBounds(t *testing.T) {
	t.Parallel()
	ts := startLocal(t, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 100}\n", Options{MaxDescriptors: 3, MaxEntries: 2})
	many := []*ratelimitv3.RateLimitDescriptor{desc("k", "1"), desc("k", "2"), desc("k", "3"), desc("k", "4")}
	if _, err := ts.client.ShouldRateLimit(t.Context(), &rlsv3.RateLimitRequest{Domain: "d", Descriptors: many}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("4 descriptors past a bound of 3: %v, want InvalidArgument", err)
	}
	if _, err := ts.client.ShouldRateLimit(t.Context(), &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("a", "1", "b", "2", "c", "3")}}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("3 entries past a bound of 2: %v, want InvalidArgument", err)
	}
	if r := ts.call(t, "d", 0, many[:3]...); r.OverallCode != ok {
		t.Fatalf("3 descriptors: %v", r)
	}
	if got := ts.svc.Metrics().requests.Load(); got != 1 {
		t.Fatalf("%d requests counted, want the one within bounds", got)
	}
	def := startLocal(t, "domain: d\n", Options{})
	if _, err := def.client.ShouldRateLimit(t.Context(), &rlsv3.RateLimitRequest{Domain: "d", Descriptors: make([]*ratelimitv3.RateLimitDescriptor, DefaultMaxDescriptors+1)}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("%d descriptors by default: %v, want InvalidArgument", DefaultMaxDescriptors+1, err)
	}
}

// envoyproxy/ratelimit's statistics split a request's hits at the thresholds: of a
// request that passes the limit, only the hits past it are over_limit and those between
// 80% of the limit and the limit are near_limit; once the count is past the limit, every
// hit is over_limit.
func TestStatisticsSplitHitsAsTheReference(t *testing.T) {
	t.Parallel()
	ts := startLocal(t, "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 10}\n  - key: z\n    rate_limit: {unit: minute, requests_per_unit: 0}\n", Options{})
	ts.alignTo(time.Minute)
	for _, h := range []uint32{7, 2, 3, 1} { // counts 7, 9 (one near), 12 (two over, one near), 13
		ts.call(t, "d", h, desc("k", "v"))
	}
	ts.call(t, "d", 4, desc("z", "v"))
	ts.wantMetrics(t, "after the calls",
		`ratekitd_rule_total_hits_total{rule="d.k"} 13`,
		`ratekitd_rule_over_limit_total{rule="d.k"} 3`,
		`ratekitd_rule_near_limit_total{rule="d.k"} 2`,
		`ratekitd_rule_over_limit_total{rule="d.z"} 4`)
}
