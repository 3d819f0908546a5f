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

	"github.com/ratekit/limiter"
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
		o.FailurePolicy = PolicyError
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
	status  *rlsv3.RateLimitResponse_DescriptorStatus // in block, allocated with the response
	block   *statusBlock
	d       algo.Decision
	decided bool // d holds a decision of the store, or of the failure policy
	outage  bool // the failure policy answered d
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
	if n, most := len(req.GetDescriptors()), s.opts.maxDescriptors(); n > most {
		return nil, status.Errorf(codes.InvalidArgument, "%d descriptors in one request; at most %d (--max-descriptors)", n, most)
	}
	cfg := s.cfg.Load()
	if cfg == pendingConfig {
		return nil, status.Error(codes.Unavailable, "no rate limit configuration loaded yet (waiting for the xDS server)")
	}
	dom := cfg.domains[req.GetDomain()]
	sc := getScratch(req)
	defer sc.release()
	checks := sc.checks
	var replaced map[string]bool // made by the first rule that replaces others
	for i, desc := range req.GetDescriptors() {
		c := &checks[i]
		if n, most := len(desc.GetEntries()), s.opts.maxEntries(); n > most {
			return nil, status.Errorf(codes.InvalidArgument, "descriptor %d has %d entries; at most %d (--max-entries)", i, n, most)
		}
		c.entries = sc.entriesOf(desc)
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
		if c.rule != nil && len(c.rule.Replaces) > 0 {
			if replaced == nil {
				replaced = map[string]bool{}
			}
			for _, name := range c.rule.Replaces {
				replaced[name] = true
			}
		}
	}
	s.metrics.requests.Add(1)
	resp := newResponse(checks)
	for i := range checks {
		c := &checks[i]
		if c.rule != nil && c.rule.Name != "" && replaced[c.rule.Name] {
			c.rule = nil // replaced: neither checked nor counted
		}
	}
	if s.opts.Concurrent && len(checks) > 1 {
		s.decideConcurrently(ctx, req.GetDomain(), checks)
	} else {
		for i := range checks {
			s.decide(ctx, req.GetDomain(), &checks[i])
		}
	}
	return s.respond(req, resp, checks)
}

// decideConcurrently decides each check that needs the store in a goroutine of its own,
// the others in place. It is apart from ShouldRateLimit so that a call of one descriptor
// does not allocate the WaitGroup its goroutines share.
func (s *Service) decideConcurrently(ctx context.Context, domain string, checks []check) {
	var wg sync.WaitGroup
	for i := range checks {
		c := &checks[i]
		if c.rule != nil && c.rule.Algorithm != nil {
			wg.Go(func() { s.decide(ctx, domain, c) })
			continue
		}
		s.decide(ctx, domain, c)
	}
	wg.Wait()
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

// decide fills c.status, zero on entry (or sets c.err, which fails the whole call).
func (s *Service) decide(ctx context.Context, domain string, c *check) {
	r := c.rule
	left := int64(0) // what the key held before a denial
	switch {
	case r == nil:
		c.status.Code = rlsv3.RateLimitResponse_OK
		return
	case r.Unlimited:
		s.countersOf(c).hit(c.hits, 0, 0, 0)
		c.status.Code, c.status.LimitRemaining = rlsv3.RateLimitResponse_OK, math.MaxUint32
		return
	case r.Algorithm == nil: // requests_per_unit: 0 denies everything
		c.d = algo.Decision{ResetAfter: untilWindowEnd(s.clock.Now(), r.Window()), RetryAfter: algo.Never}
	default:
		l, err := s.limiters.of(r)
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
		switch {
		case err != nil:
			if !s.answered(ctx, c, err) {
				return
			}
			c.outage = true
		default:
			s.storeAnswered(ctx)
			left = c.d.Remaining
			switch {
			case c.d.Allowed || c.hits == 0:
			case r.Charge:
				c.d = chargeHits(ctx, l, key, c.hits, c.d)
			case !s.opts.DenialsSpendNothing:
				c.d = spendRest(ctx, l, key, c.d)
			}
		}
		c.decided = true
	}
	// A look that spends nothing (hits 0) is over the limit only on a charge rule, while
	// nothing is left (the key in debt, or empty): a usage-based limit checks with a look
	// before the request and charges the usage after it. Elsewhere a look is never over:
	// envoyproxy/ratelimit's INCRBY 0 answers OK unless its count passed the limit.
	over := !c.d.Allowed && c.hits > 0
	if c.hits == 0 && r.Charge {
		over = !c.d.Allowed && (!c.outage || s.opts.FailurePolicy == PolicyClosed)
	}
	shadow := over && r.Shadow
	code := rlsv3.RateLimitResponse_OK
	if over && !shadow {
		code = rlsv3.RateLimitResponse_OVER_LIMIT
	}
	if c.outage {
		// The failure policy answered: counted apart, never as over (or near) the limit.
		s.countersOf(c).hit(c.hits, 0, 0, 0)
		s.metrics.outageAnswer(code)
	} else {
		o, n := hitsPastThresholds(c.d, c.hits, over, left)
		sh := int64(0)
		if shadow {
			sh = o
		}
		s.countersOf(c).hit(c.hits, o, n, sh)
	}
	st := c.status
	st.Code = code
	st.CurrentLimit = c.block.currentLimit(r)
	st.LimitRemaining = uint32(min(max(c.d.Remaining, 0), math.MaxUint32))
	if c.d.ResetAfter > 0 && c.d.ResetAfter < algo.Never {
		// durationpb.New's fields, in the message allocated with the status.
		c.block.reset.Seconds, c.block.reset.Nanos = int64(c.d.ResetAfter/time.Second), int32(c.d.ResetAfter%time.Second)
		st.DurationUntilReset = &c.block.reset
	}
}

// countersOf returns the counters of c's statistics path. A rule whose path names no
// request value keeps its counters (see Rule.stat), so its calls look nothing up.
func (s *Service) countersOf(c *check) *ruleCounters {
	r := c.rule
	if k := r.counters.Load(); k != nil && k.m == s.metrics {
		return k.rc
	}
	rc := s.metrics.rule(c.stat)
	if r.stat.Load() != nil { // c.stat is the rule's one path
		r.counters.Store(&ruleCountersIn{m: s.metrics, rc: rc})
	}
	return rc
}

// spendRest counts a denied request's hits as envoyproxy/ratelimit does (its INCRBY adds
// them whatever the answer): what the key still holds, d.Remaining, is spent, so that the
// key grants nothing more until its window ends (or its bucket refills), as the
// reference's count past the limit grants nothing more until its window ends. For the
// fixed window, the reference's algorithm, the answers that follow are the reference's;
// the hits beyond what was left are not recorded, which only a look (hits_addend 0)
// could tell: the reference answers it OVER_LIMIT after a denial, ratekitd OK with 0
// remaining. Recording them (chargeHits) is a charge rule's choice, not the default: a
// window forgets its excess when it ends, but a bucket or a sliding window carries it
// over, so a client that kept calling while denied would stay denied for as long as it
// kept calling. A grant taken in between by another call leaves less to spend: spendRest
// tries twice, then keeps d. The denial's RetryAfter is d's.
func spendRest(ctx context.Context, l *limiter.Limiter, key string, d algo.Decision) algo.Decision {
	for range 2 {
		if d.Remaining <= 0 {
			break
		}
		spent, err := l.AllowN(ctx, key, d.Remaining)
		if err != nil {
			break
		}
		d.Remaining, d.ResetAfter = spent.Remaining, max(d.ResetAfter, spent.ResetAfter)
		if spent.Allowed {
			break
		}
	}
	return d
}

// chargeHits records the hits of a charge rule's denied request (d) in full, through
// limiter.Charge: what the key held is spent and the rest is debt, which later requests
// wait out (a window's count passes its limit, as envoyproxy/ratelimit's INCRBY passes
// it). A usage report (Envoy's apply_on_stream_done) is such a request: the tokens a
// response used, known once it is done, whatever was left. The answer stays the denial,
// with the figures of the key after the charge: Remaining 0 while in debt, RetryAfter
// until the next permit, ResetAfter until the key is fresh. If the charge fails (the
// store went away in between), d stands and the hits are lost, as a failed call's are.
func chargeHits(ctx context.Context, l *limiter.Limiter, key string, hits int64, d algo.Decision) algo.Decision {
	ch, err := l.Charge(ctx, key, hits)
	if err != nil {
		return d
	}
	d.Remaining, d.RetryAfter, d.ResetAfter = ch.Remaining, ch.RetryAfter, ch.ResetAfter
	return d
}

// hitsPastThresholds splits a decision's hits as envoyproxy/ratelimit's statistics do,
// with Limit as the threshold (the count of a window, the burst of a bucket) and 80% of it
// as the near-limit threshold: of a request over the limit, the hits past the limit are
// over it and those between the near-limit threshold and the limit near it; of a request
// within the limit, the hits past the near-limit threshold are near it. left is what the
// key held before a denial (Remaining before a grant is Remaining + hits).
func hitsPastThresholds(d algo.Decision, hits int64, over bool, left int64) (overHits, nearHits int64) {
	switch {
	case hits <= 0:
		return 0, 0
	case d.Limit <= 0: // requests_per_unit 0: every hit is over
		if over {
			return hits, 0
		}
		return 0, 0
	}
	nearT := int64(math.Floor(nearLimitRatio * float64(d.Limit)))
	if over {
		left = max(left, 0)
		if left == 0 || left >= hits { // already past the limit, or denied on other grounds
			return hits, 0
		}
		before := d.Limit - left
		return hits - left, d.Limit - max(nearT, before)
	}
	after := d.Limit - d.Remaining
	if after <= nearT {
		return 0, 0
	}
	return 0, min(hits, after-nearT)
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
	case errors.Is(err, store.ErrKeyUnavailable):
		// One key's failure (its Redis key holds other data): not an outage of the store.
		// At most one line a second.
		if sec := time.Now().Unix(); s.lastWarn.Swap(sec) != sec {
			s.log.LogAttrs(ctx, slog.LevelWarn, "store cannot decide a key", slog.String("rule", c.rule.id), slog.String("policy", string(s.opts.FailurePolicy)), slog.Any("error", err))
		}
	case errors.Is(err, store.ErrUnavailable) || errors.Is(err, store.ErrClosed):
		s.storeFailed(ctx, err)
	default:
		c.err = status.Errorf(codes.Internal, "rule %s: %v", c.rule.id, err)
		return false
	}
	if s.opts.FailurePolicy == PolicyError {
		s.metrics.outageErrors.Add(1)
		c.err = status.Errorf(codes.Unavailable, "rate limit store unavailable: %v", err)
		return false
	}
	return true // the policy answered: FailClosed denied, FailOpen allowed, Fallback decided
}

// storeFailed starts an outage, if none is on: one line with its cause, and the
// ratekitd_store_outage gauge at 1. The calls that fail during it are counted, not
// logged.
func (s *Service) storeFailed(ctx context.Context, err error) {
	if s.metrics.outageSince.CompareAndSwap(0, s.clock.Now().UnixNano()) {
		s.log.LogAttrs(ctx, slog.LevelError, "store outage started", slog.String("policy", string(s.opts.FailurePolicy)), slog.Any("cause", err))
	}
}

// storeAnswered ends the outage in progress, if any, with one line saying how long it
// lasted. Without one it costs an atomic load.
func (s *Service) storeAnswered(ctx context.Context) {
	since := s.metrics.outageSince.Load()
	if since != 0 && s.metrics.outageSince.CompareAndSwap(since, 0) {
		s.log.LogAttrs(ctx, slog.LevelInfo, "store outage ended", slog.Duration("duration", s.clock.Now().Sub(time.Unix(0, since))))
	}
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
	r := &Rule{rate: rt, id: domain + ".override", transient: true}
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
