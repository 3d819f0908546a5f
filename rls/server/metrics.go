package server

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/ratekit/limiter"
)

// Metrics counts what the service decides, per rule as envoyproxy/ratelimit's statistics
// do (total_hits, over_limit, near_limit, shadow_mode, each by hits_addend), and what the
// library's Observer reports (outcomes, store latency, breaker changes). It writes them in
// the Prometheus text format: a few dozen atomic counters need no client library, and
// keeping OpenTelemetry out keeps ratekitd one small binary; otellimit remains the way to
// feed an OpenTelemetry pipeline from a program of your own.
type Metrics struct {
	requests      atomic.Int64
	overLimit     atomic.Int64
	globalShadow  atomic.Int64 // requests OVER_LIMIT answered OK by global shadow mode
	rulesMu       sync.RWMutex
	rules         map[string]*ruleCounters // stat → counters (see rule)
	outcomes      [7]atomic.Int64          // one per limiter.Outcome
	breaker       [3]atomic.Int64          // transitions into each BreakerState
	breakersNow   [3]atomic.Int64          // breakers now in each BreakerState but closed
	outageAnswers [2]atomic.Int64          // descriptors the failure policy answered OK, OVER_LIMIT
	outageErrors  atomic.Int64             // descriptors whose outage failed the call (PolicyError)
	outageSince   atomic.Int64             // Unix ns the store outage in progress began; 0: none
	latency       histogram
	reloadsOK     atomic.Int64
	reloadsKO     atomic.Int64
}

// outageAnswer counts a descriptor the failure policy answered.
func (m *Metrics) outageAnswer(code rlsv3.RateLimitResponse_Code) {
	if code == rlsv3.RateLimitResponse_OVER_LIMIT {
		m.outageAnswers[1].Add(1)
	} else {
		m.outageAnswers[0].Add(1)
	}
}

var _ limiter.Observer = (*Metrics)(nil)

func newMetrics() *Metrics { return &Metrics{rules: map[string]*ruleCounters{}} }

type ruleCounters struct {
	hits, over, near, shadow atomic.Int64
}

// rule returns the counters of a rule's statistics path. They are in a plain map: a rule
// whose path names the request's value (detailed_metric, value_to_metric) adds a path per
// value, which a sync.Map held in about twice the bytes; the calls of the other rules do
// not look theirs up (see Service.countersOf).
func (m *Metrics) rule(stat string) *ruleCounters {
	m.rulesMu.RLock()
	rc := m.rules[stat]
	m.rulesMu.RUnlock()
	if rc != nil {
		return rc
	}
	m.rulesMu.Lock()
	defer m.rulesMu.Unlock()
	if rc = m.rules[stat]; rc == nil {
		rc = &ruleCounters{}
		m.rules[stat] = rc
	}
	return rc
}

// hit counts a decision of n hits, of which over were over the limit, near within it but
// past its near-limit threshold, and shadow over it but answered OK (shadow mode).
func (rc *ruleCounters) hit(n, over, near, shadow int64) {
	rc.hits.Add(n)
	if over > 0 {
		rc.over.Add(over)
	}
	if near > 0 {
		rc.near.Add(near)
	}
	if shadow > 0 {
		rc.shadow.Add(shadow)
	}
}

// Decided implements limiter.Observer.
func (m *Metrics) Decided(_ context.Context, e limiter.Event) {
	if int(e.Outcome) < len(m.outcomes) {
		m.outcomes[e.Outcome].Add(1)
	}
	if e.Latency > 0 {
		m.latency.observe(e.Latency.Seconds())
	}
}

// BreakerChanged implements limiter.Observer.
func (m *Metrics) BreakerChanged(from, to limiter.BreakerState) {
	if int(to) < len(m.breaker) {
		m.breaker[to].Add(1)
	}
	// A breaker starts closed: the gauge counts those in the other states.
	if from != limiter.BreakerClosed && int(from) < len(m.breakersNow) {
		m.breakersNow[from].Add(-1)
	}
	if to != limiter.BreakerClosed && int(to) < len(m.breakersNow) {
		m.breakersNow[to].Add(1)
	}
}

// latencyBuckets are the upper bounds, in seconds, of the store latency histogram: a
// local decision takes about a microsecond, a Redis one about a millisecond.
var latencyBuckets = []float64{0.00001, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}

type histogram struct {
	counts [14]atomic.Int64 // one per bucket, and +Inf
	sumNs  atomic.Int64
}

func (h *histogram) observe(sec float64) {
	i, _ := slices.BinarySearch(latencyBuckets, sec)
	h.counts[i].Add(1)
	h.sumNs.Add(int64(sec * 1e9))
}

// WriteTo writes the metrics in the Prometheus text exposition format (version 0.0.4).
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	cw := &countWriter{w: bufio.NewWriter(w)}
	p := func(format string, args ...any) { fmt.Fprintf(cw, format, args...) }
	p("# HELP ratekitd_requests_total ShouldRateLimit calls answered.\n# TYPE ratekitd_requests_total counter\nratekitd_requests_total %d\n", m.requests.Load())
	p("# HELP ratekitd_over_limit_total ShouldRateLimit calls answered OVER_LIMIT by a limit (not those only the failure policy denied).\n# TYPE ratekitd_over_limit_total counter\nratekitd_over_limit_total %d\n", m.overLimit.Load())
	p("# HELP ratekitd_global_shadow_mode_total ShouldRateLimit calls over the limit answered OK by global shadow mode (--shadow).\n# TYPE ratekitd_global_shadow_mode_total counter\nratekitd_global_shadow_mode_total %d\n", m.globalShadow.Load())
	m.rulesMu.RLock()
	stats := slices.Sorted(maps.Keys(m.rules))
	m.rulesMu.RUnlock()
	for _, s := range []struct{ name, help string }{
		{"total_hits", "Hits (by hits_addend) on the rule."},
		{"over_limit", "Hits past the rule's limit (not those the failure policy answered: ratekitd_outage_answers_total)."},
		{"near_limit", "Hits up to the limit but past 80% of it."},
		{"shadow_mode", "Hits past the limit answered OK because the rule is in shadow mode."},
	} {
		p("# HELP ratekitd_rule_%s_total %s\n# TYPE ratekitd_rule_%s_total counter\n", s.name, s.help, s.name)
		for _, stat := range stats {
			rc := m.rule(stat)
			v := map[string]int64{"total_hits": rc.hits.Load(), "over_limit": rc.over.Load(), "near_limit": rc.near.Load(), "shadow_mode": rc.shadow.Load()}[s.name]
			p("ratekitd_rule_%s_total{rule=\"%s\"} %d\n", s.name, escapeLabel(stat), v)
		}
	}
	p("# HELP ratekitd_decisions_total Store decisions by outcome (the library's Observer).\n# TYPE ratekitd_decisions_total counter\n")
	for o := range m.outcomes {
		p("ratekitd_decisions_total{outcome=\"%s\"} %d\n", limiter.Outcome(o), m.outcomes[o].Load())
	}
	p("# HELP ratekitd_breaker_transitions_total Circuit breaker changes, by the state entered.\n# TYPE ratekitd_breaker_transitions_total counter\n")
	for st := range m.breaker {
		p("ratekitd_breaker_transitions_total{state=\"%s\"} %d\n", limiter.BreakerState(st), m.breaker[st].Load())
	}
	p("# HELP ratekitd_breakers Circuit breakers (one per algorithm config) now open or half open.\n# TYPE ratekitd_breakers gauge\n")
	for _, st := range []limiter.BreakerState{limiter.BreakerOpen, limiter.BreakerHalfOpen} {
		p("ratekitd_breakers{state=\"%s\"} %d\n", st, m.breakersNow[st].Load())
	}
	outage := 0
	if m.outageSince.Load() != 0 {
		outage = 1
	}
	p("# HELP ratekitd_store_outage 1 while the store is failing (from its first failure to its next answer), else 0.\n# TYPE ratekitd_store_outage gauge\nratekitd_store_outage %d\n", outage)
	p("# HELP ratekitd_outage_answers_total Descriptors the failure policy answered while the store could not decide, by answer (error: the call failed, --failure-policy error).\n# TYPE ratekitd_outage_answers_total counter\n")
	p("ratekitd_outage_answers_total{code=\"OK\"} %d\nratekitd_outage_answers_total{code=\"OVER_LIMIT\"} %d\nratekitd_outage_answers_total{code=\"error\"} %d\n", m.outageAnswers[0].Load(), m.outageAnswers[1].Load(), m.outageErrors.Load())
	p("# HELP ratekitd_store_latency_seconds Time the store took to decide.\n# TYPE ratekitd_store_latency_seconds histogram\n")
	var cum int64
	for i, le := range latencyBuckets {
		cum += m.latency.counts[i].Load()
		p("ratekitd_store_latency_seconds_bucket{le=\"%g\"} %d\n", le, cum)
	}
	cum += m.latency.counts[len(latencyBuckets)].Load()
	p("ratekitd_store_latency_seconds_bucket{le=\"+Inf\"} %d\nratekitd_store_latency_seconds_sum %g\nratekitd_store_latency_seconds_count %d\n", cum, float64(m.latency.sumNs.Load())/1e9, cum)
	p("# HELP ratekitd_config_reloads_total Configuration reloads, by result.\n# TYPE ratekitd_config_reloads_total counter\n")
	p("ratekitd_config_reloads_total{result=\"ok\"} %d\nratekitd_config_reloads_total{result=\"refused\"} %d\n", m.reloadsOK.Load(), m.reloadsKO.Load())
	if err := cw.w.(*bufio.Writer).Flush(); err != nil && cw.err == nil {
		cw.err = err
	}
	return cw.n, cw.err
}

// escapeLabel escapes a label value as the text format asks: backslash, quote, newline.
func escapeLabel(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(b []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(b)
	c.n += int64(n)
	c.err = err
	return n, err
}
