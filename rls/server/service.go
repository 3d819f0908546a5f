package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/store"
)

// Service answers Envoy's ShouldRateLimit from a Config, deciding each descriptor with
// this library's limiters over one store. It is safe for concurrent use; SetConfig swaps
// the configuration while calls are in flight.
type Service struct {
	rlsv3.UnimplementedRateLimitServiceServer

	cfg      atomic.Pointer[Config]
	limiters *limiters
	metrics  *Metrics
	clock    clockx.Clock
	log      *slog.Logger
	lastWarn atomic.Int64 // the Unix second of the last "store unavailable" log line
	opts     Options
}

// New returns a Service deciding cfg on s. A nil cfg or s, an unknown failure policy, or
// PolicyLocal without a FallbackStore is an error wrapping algo.ErrInvalidConfig.
func New(cfg *Config, s store.Store, o Options) (*Service, error) {
	switch {
	case cfg == nil:
		return nil, fmt.Errorf("%w: server.New: nil config", algo.ErrInvalidConfig)
	case s == nil:
		return nil, fmt.Errorf("%w: server.New: nil store", algo.ErrInvalidConfig)
	}
	switch o.FailurePolicy {
	case "":
		o.FailurePolicy = PolicyClosed
	case PolicyClosed, PolicyOpen, PolicyError:
	case PolicyLocal:
		if o.FallbackStore == nil {
			return nil, fmt.Errorf("%w: server.New: failure policy %q needs a FallbackStore", algo.ErrInvalidConfig, o.FailurePolicy)
		}
	default:
		return nil, fmt.Errorf("%w: server.New: unknown failure policy %q (want closed, open, local or error)", algo.ErrInvalidConfig, o.FailurePolicy)
	}
	if o.Clock == nil {
		o.Clock = clockx.Real()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	svc := &Service{metrics: newMetrics(), clock: o.Clock, log: o.Logger, opts: o}
	svc.limiters = newLimiters(s, &o, svc.metrics)
	svc.cfg.Store(cfg)
	return svc, nil
}

// SetConfig makes cfg the configuration of every call that starts from now on. The counts
// of descriptors whose rules keep their algorithm are kept: they live in the store under
// keys that do not depend on the configuration.
func (s *Service) SetConfig(cfg *Config) { s.cfg.Store(cfg) }

// Config returns the configuration in use.
func (s *Service) Config() *Config { return s.cfg.Load() }

// Metrics returns the service's counters.
func (s *Service) Metrics() *Metrics { return s.metrics }

// check is the work on one descriptor of a request.
type check struct {
	entries []entry
	keyed   []entry // the entries the store counts under (share_threshold)
	rule    *Rule
	stat    string
	hits    int64
	status  *rlsv3.RateLimitResponse_DescriptorStatus
	d       algo.Decision
	decided bool // d holds a decision of the store
	err     error
}

// ShouldRateLimit decides every descriptor of req and answers OVER_LIMIT if any of them
// is over its limit (and not in shadow mode), as envoyproxy/ratelimit does: every
// descriptor is counted, whatever the others answer.
func (s *Service) ShouldRateLimit(ctx context.Context, req *rlsv3.RateLimitRequest) (*rlsv3.RateLimitResponse, error) {
	if req.GetDomain() == "" {
		return nil, status.Error(codes.InvalidArgument, "rate limit domain must not be empty")
	}
	if len(req.GetDescriptors()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "rate limit descriptor list must not be empty")
	}
	s.metrics.requests.Add(1)
	cfg := s.cfg.Load()
	dom := cfg.domains[req.GetDomain()]
	checks := make([]check, len(req.GetDescriptors()))
	replaced := map[string]bool{}
	for i, desc := range req.GetDescriptors() {
		c := &checks[i]
		c.entries = make([]entry, len(desc.GetEntries()))
		for j, e := range desc.GetEntries() {
			c.entries[j] = entry{e.GetKey(), e.GetValue()}
		}
		c.hits = hitsOf(req, desc)
		c.keyed = c.entries
		if dom == nil {
			continue // an unknown domain limits nothing, as in envoyproxy/ratelimit
		}
		if o := desc.GetLimit(); o != nil {
			var err error
			if c.rule, c.stat, err = overrideRule(dom.name, o); err != nil {
				return nil, err
			}
		} else {
			c.rule, c.stat, c.keyed = dom.match(c.entries)
		}
		if c.rule != nil {
			for _, name := range c.rule.Replaces {
				replaced[name] = true
			}
		}
	}
	var wg sync.WaitGroup
	for i := range checks {
		c := &checks[i]
		if c.rule != nil && c.rule.Name != "" && replaced[c.rule.Name] {
			c.rule = nil // replaced: neither checked nor counted
		}
		if s.opts.Concurrent && c.rule != nil && c.rule.Algorithm != nil && len(checks) > 1 {
			wg.Go(func() { s.decide(ctx, req.GetDomain(), c) })
			continue
		}
		s.decide(ctx, req.GetDomain(), c)
	}
	wg.Wait()
	resp := &rlsv3.RateLimitResponse{OverallCode: rlsv3.RateLimitResponse_OK}
	for i := range checks {
		c := &checks[i]
		if c.err != nil {
			return nil, c.err
		}
		resp.Statuses = append(resp.Statuses, c.status)
		if c.status.Code == rlsv3.RateLimitResponse_OVER_LIMIT {
			resp.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
		}
	}
	if s.opts.Headers {
		resp.ResponseHeadersToAdd = rateLimitHeaders(checks, resp.OverallCode)
	}
	if resp.OverallCode == rlsv3.RateLimitResponse_OVER_LIMIT {
		s.metrics.overLimit.Add(1)
	}
	return resp, nil
}

// hitsOf is the cost of one descriptor: its own hits_addend when set (0 included: a look
// that spends nothing), else the request's, else 1. A descriptor of negative hits (Envoy
// asking to give back what it spent) is answered as a look and gives nothing back: a
// refund needs the grant it refunds, which the protocol does not name, and keeping the
// permits can only under-admit.
func hitsOf(req *rlsv3.RateLimitRequest, desc *ratelimitv3.RateLimitDescriptor) int64 {
	if desc.GetIsNegativeHits() {
		return 0
	}
	if h := desc.GetHitsAddend(); h != nil {
		return int64(min(h.GetValue(), math.MaxInt64))
	}
	if h := req.GetHitsAddend(); h > 0 {
		return int64(h)
	}
	return 1
}

// decide fills c.status (or c.err, which fails the whole call).
func (s *Service) decide(ctx context.Context, domain string, c *check) {
	r := c.rule
	switch {
	case r == nil:
		c.status = &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK}
		return
	case r.Unlimited:
		s.metrics.rule(c.stat).hit(c.hits, false, false, false)
		c.status = &rlsv3.RateLimitResponse_DescriptorStatus{Code: rlsv3.RateLimitResponse_OK, LimitRemaining: math.MaxUint32}
		return
	case r.Algorithm == nil: // requests_per_unit: 0 denies everything
		c.d = algo.Decision{ResetAfter: untilWindowEnd(s.clock.Now(), r.Window()), RetryAfter: algo.Never}
	default:
		l, err := s.limiters.get(r.Algorithm)
		if err != nil {
			c.err = status.Errorf(codes.Internal, "rule %s: %v", r.id, err)
			return
		}
		key := limiterKey(domain, c.keyed)
		if c.hits == 0 {
			// A look (hits_addend 0): Peek's Remaining is what the key has now.
			c.d, err = l.Peek(ctx, key)
		} else {
			c.d, err = l.AllowN(ctx, key, c.hits)
		}
		if err != nil && !s.answered(ctx, c, err) {
			return
		}
		c.decided = true
	}
	// A look that spends nothing (hits 0) is never over the limit: envoyproxy/ratelimit's
	// INCRBY 0 finds the count at most at the limit.
	over := !c.d.Allowed && c.hits > 0
	shadow := over && (r.Shadow || s.opts.Shadow)
	// Near the limit: more than 80% of what the algorithm grants at once is used (Limit
	// is the count of a window, the burst of a bucket).
	near := !over && c.d.Limit > 0 && float64(c.d.Limit-c.d.Remaining) > nearLimitRatio*float64(c.d.Limit)
	s.metrics.rule(c.stat).hit(c.hits, over, near, shadow)
	code := rlsv3.RateLimitResponse_OK
	if over && !shadow {
		code = rlsv3.RateLimitResponse_OVER_LIMIT
	}
	c.status = &rlsv3.RateLimitResponse_DescriptorStatus{
		Code:           code,
		CurrentLimit:   currentLimit(r),
		LimitRemaining: uint32(min(max(c.d.Remaining, 0), math.MaxUint32)),
	}
	if c.d.ResetAfter > 0 && c.d.ResetAfter < algo.Never {
		c.status.DurationUntilReset = durationpb.New(c.d.ResetAfter)
	}
}

// nearLimitRatio is envoyproxy/ratelimit's default NEAR_LIMIT_RATIO: a hit that leaves
// more than 80% of the limit used counts as near the limit.
const nearLimitRatio = 0.8

// answered handles a limiter error: it reports whether c.d (the failure policy's answer)
// stands, or sets c.err to fail the call.
func (s *Service) answered(ctx context.Context, c *check, err error) bool {
	switch {
	case ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)):
		c.err = status.FromContextError(ctx.Err()).Err()
		return false
	case errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrClosed):
		// At most one line a second: an outage fails every call, and /metrics counts them
		// all (ratekitd_decisions_total by outcome).
		if sec := time.Now().Unix(); s.lastWarn.Swap(sec) != sec {
			s.log.LogAttrs(ctx, slog.LevelWarn, "store unavailable", slog.String("rule", c.rule.id), slog.String("policy", string(s.opts.FailurePolicy)), slog.Any("error", err))
		}
		if s.opts.FailurePolicy == PolicyError {
			c.err = status.Errorf(codes.Unavailable, "rate limit store unavailable: %v", err)
			return false
		}
		return true // the policy answered: FailClosed denied, FailOpen allowed, Fallback decided
	default:
		c.err = status.Errorf(codes.Internal, "rule %s: %v", c.rule.id, err)
		return false
	}
}

// currentLimit is the limit Envoy is told about.
func currentLimit(r *Rule) *rlsv3.RateLimitResponse_RateLimit {
	cl := &rlsv3.RateLimitResponse_RateLimit{Name: r.Name, RequestsPerUnit: uint32(r.rate.count), Unit: r.rate.unit}
	if r.rate.multiplier > 1 {
		cl.UnitMultiplier = wrapperspb.UInt32(r.rate.multiplier)
	}
	return cl
}

// overrideRule is the rule of a descriptor that carries its own limit (Envoy's
// RateLimitOverride, from dynamic metadata): a fixed window of that size, never in shadow
// mode, as envoyproxy/ratelimit applies it. A unit it does not know limits nothing. Its
// unit_multiplier, which envoyproxy/ratelimit ignores, is honoured: the window is that
// many units; a multiplier of 0, or one whose window is longer than the longest the
// algorithms compute (about 31.7 years), is an error, never dropped.
func overrideRule(domain string, o *ratelimitv3.RateLimitDescriptor_RateLimitOverride) (*Rule, string, error) {
	u := rlsv3.RateLimitResponse_RateLimit_Unit(o.GetUnit())
	if _, ok := unitSpan[u]; !ok {
		return nil, "", nil
	}
	mult := uint64(1)
	if m := o.GetUnitMultiplier(); m != nil {
		mult = uint64(m.GetValue())
	}
	rt, err := newRate(int64(o.GetRequestsPerUnit()), u, mult)
	if err != nil {
		return nil, "", status.Errorf(codes.InvalidArgument, "limit override: %v", err)
	}
	r := &Rule{rate: rt, id: domain + ".override"}
	if r.rate.count > 0 {
		if r.Algorithm, err = buildAlgorithm(defaultAlgorithm, r.rate, 0); err != nil {
			return nil, "", status.Errorf(codes.InvalidArgument, "limit override: %v", err)
		}
	}
	return r, r.id, nil
}

var _ rlsv3.RateLimitServiceServer = (*Service)(nil)

// clampSeconds is d in whole seconds rounded up, for headers.
func clampSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}
