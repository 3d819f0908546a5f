package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// llmConfig limits tokens per API key, charged after the fact: 1000 a minute in a token
// bucket (earned back at 1000/60 a second).
const llmConfig = "domain: llm\ndescriptors:\n  - key: api_key\n    rate_limit: {rate: 1000/min, algorithm: token-bucket%s}\n"

// TestChargeRuleChargesUsageReports walks what Envoy sends for a usage-based limit: a look
// (hits_addend 0) before each request, and after it, on the stream's end
// (apply_on_stream_done), the same descriptor with the tokens used as hits_addend. A report
// larger than what is left is charged in full, so the looks that follow are OVER_LIMIT
// until the debt is earned back, with the reference's counting and with
// DenialsSpendNothing alike.
func TestChargeRuleChargesUsageReports(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{{}, {DenialsSpendNothing: true}} {
		t.Run(fmt.Sprintf("DenialsSpendNothing=%v", o.DenialsSpendNothing), func(t *testing.T) {
			t.Parallel()
			ts := startLocal(t, fmt.Sprintf(llmConfig, ", charge: true"), o)
			look := func() *rlsv3.RateLimitResponse_DescriptorStatus {
				return ts.call(t, "llm", 0, withHits(desc("api_key", "a"), 0)).Statuses[0]
			}
			report := func(tokens uint64) *rlsv3.RateLimitResponse_DescriptorStatus {
				return ts.call(t, "llm", 0, withHits(desc("api_key", "a"), tokens)).Statuses[0]
			}

			st := look()
			assert.Equal(t, ok, st.Code)
			assert.Equal(t, uint32(1000), st.LimitRemaining)
			st = report(600)
			assert.Equal(t, ok, st.Code, "a report that fits")
			assert.Equal(t, uint32(400), st.LimitRemaining)

			// 1500 tokens used with 400 left: charged, 1100 in debt. The answer (which Envoy
			// ignores on a stream's end) says the key is past its limit until the debt and
			// one more token are earned back: 1101 tokens at 1000 a minute.
			st = report(1500)
			assert.Equal(t, over, st.Code)
			assert.Equal(t, uint32(0), st.LimitRemaining)
			assert.Equal(t, 2*time.Minute, st.DurationUntilReset.AsDuration().Round(time.Minute), "until full: 2100 tokens")

			st = look()
			assert.Equal(t, over, st.Code, "a look while in debt")
			assert.Equal(t, uint32(0), st.LimitRemaining)
			ts.clock.Add(time.Minute) // 1000 earned back: still 100 in debt
			assert.Equal(t, over, look().Code, "a look while still 100 in debt")
			ts.clock.Add(7 * time.Second) // 116.7 more: 16 tokens
			st = look()
			assert.Equal(t, ok, st.Code, "a look once the debt is paid")
			assert.Equal(t, uint32(16), st.LimitRemaining)

			m := ts.metricsText(t)
			assert.Contains(t, m, `ratekitd_decisions_total{outcome="charged"} 1`)
		})
	}
}

// TestWithoutChargeAReportPastTheRestIsNotRecorded is the contrast: without charge: true,
// under DenialsSpendNothing, the same report is denied and spends nothing (dropped), and
// with the reference's counting it spends only what was left.
func TestWithoutChargeAReportPastTheRestIsNotRecorded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o    Options
		left uint32 // what a look finds after the report
	}{{Options{DenialsSpendNothing: true}, 400}, {Options{}, 0}} {
		ts := startLocal(t, fmt.Sprintf(llmConfig, ""), tc.o)
		ts.call(t, "llm", 0, withHits(desc("api_key", "a"), 600))
		assert.Equal(t, over, ts.call(t, "llm", 0, withHits(desc("api_key", "a"), 1500)).Statuses[0].Code)
		st := ts.call(t, "llm", 0, withHits(desc("api_key", "a"), 0)).Statuses[0]
		assert.Equal(t, ok, st.Code, "a look is never over without charge: true")
		assert.Equal(t, tc.left, st.LimitRemaining)
		ts.clock.Add(7 * time.Second) // no debt to pay: 116 earned
		assert.Equal(t, tc.left+116, ts.call(t, "llm", 0, withHits(desc("api_key", "a"), 0)).Statuses[0].LimitRemaining)
	}
}

// TestChargeRuleOutageLook: a look during a store outage is answered by the failure
// policy, never by the zero Decision a failed Peek leaves: closed denies, open passes.
func TestChargeRuleOutageLook(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		policy Policy
		want   rlsv3.RateLimitResponse_Code
	}{{PolicyClosed, over}, {PolicyOpen, ok}} {
		cfg, _ := loadConfig(t, fmt.Sprintf(llmConfig, ", charge: true"))
		st, err := local.New()
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		svc, err := New(cfg, peekDown{st}, Options{FailurePolicy: tc.policy})
		require.NoError(t, err)
		r, err := svc.ShouldRateLimit(t.Context(), &rlsv3.RateLimitRequest{Domain: "llm",
			Descriptors: []*ratelimitv3.RateLimitDescriptor{withHits(desc("api_key", "a"), 0)}})
		require.NoError(t, err)
		assert.Equal(t, tc.want, r.Statuses[0].Code, "policy %s", tc.policy)
	}
}

// peekDown is a store whose Peek fails as a Redis outage does.
type peekDown struct{ *local.Store }

func (peekDown) Peek(context.Context, string, algo.Algorithm, algo.Request) (algo.Decision, error) {
	return algo.Decision{}, fmt.Errorf("%w: test outage (connection refused)", store.ErrUnavailable)
}

// TestChargeNeedsAnAlgorithmThatCharges: charge: true loads with every algorithm that
// states algo.Chargeable and is refused, naming the line, with any other, and beside
// unlimited or requests_per_unit 0.
func TestChargeNeedsAnAlgorithmThatCharges(t *testing.T) {
	t.Parallel()
	refused := 0
	for _, a := range algorithms {
		yaml := fmt.Sprintf("domain: d\ndescriptors:\n  - key: k\n    rate_limit:\n      rate: 10/s\n      algorithm: %s\n      charge: true\n", a.name)
		alg, err := buildAlgorithm(a.name, rate{count: 10, unit: rlsv3.RateLimitResponse_RateLimit_SECOND, multiplier: 1}, 0)
		require.NoError(t, err)
		_, err = Load(writeFile(t, t.TempDir(), "c.yaml", yaml))
		if chargeable(alg) {
			assert.NoError(t, err, a.name)
			continue
		}
		refused++
		require.ErrorIs(t, err, algo.ErrInvalidConfig, a.name)
		assert.Contains(t, err.Error(), ":7: descriptors[0].rate_limit.charge: the algorithm "+a.name+" cannot charge")
	}
	t.Logf("%d of %d algorithms cannot charge yet", refused, len(algorithms))
	for _, tc := range []struct{ yaml, want string }{
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unlimited: true, charge: true}\n", "rate_limit.charge: not allowed with unlimited"},
		{"domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 0, charge: true}\n", "rate_limit.charge: not allowed with requests_per_unit: 0"},
	} {
		_, err := Load(writeFile(t, t.TempDir(), "c.yaml", tc.yaml))
		require.True(t, errors.Is(err, algo.ErrInvalidConfig), "%v", err)
		assert.True(t, strings.Contains(err.Error(), tc.want), "%v, want %q", err, tc.want)
	}
	// charge: false is the default, allowed anywhere.
	_, err := Load(writeFile(t, t.TempDir(), "c.yaml", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unlimited: true, charge: false}\n"))
	assert.NoError(t, err)
}
