package server

import (
	"fmt"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// respond builds the response from the decided checks (or fails the call with the first
// check's error). The overall code is envoyproxy/ratelimit's: OVER_LIMIT when a rule not
// in quota mode is over its limit, or when the request has rules in quota mode and every
// one of them is; global shadow mode (Options.Shadow) then turns only the overall code to
// OK, each status keeping its code.
func (s *Service) respond(req *rlsv3.RateLimitRequest, resp *rlsv3.RateLimitResponse, checks []check) (*rlsv3.RateLimitResponse, error) {
	resp.OverallCode = rlsv3.RateLimitResponse_OK
	var overRules, overQuotas, quotas int
	realDenial := false // a status OVER_LIMIT by a store's decision, not the failure policy's
	for i := range checks {
		c := &checks[i]
		if c.err != nil {
			return nil, c.err
		}
		quota := s.isQuota(c)
		if quota {
			quotas++
		}
		if c.status.Code == rlsv3.RateLimitResponse_OVER_LIMIT {
			realDenial = realDenial || !c.outage
			if quota {
				overQuotas++
			} else {
				overRules++
			}
		}
	}
	if overRules > 0 || (quotas > 0 && overQuotas == quotas) {
		resp.OverallCode = rlsv3.RateLimitResponse_OVER_LIMIT
	}
	if resp.OverallCode == rlsv3.RateLimitResponse_OVER_LIMIT {
		if s.opts.Shadow {
			resp.OverallCode = rlsv3.RateLimitResponse_OK
			s.metrics.globalShadow.Add(1)
		} else if realDenial {
			s.metrics.overLimit.Add(1) // not a request only the failure policy denied
		}
	}
	if s.opts.ReferenceHeaders {
		resp.ResponseHeadersToAdd = referenceHeaders(checks, s.isQuota, s.opts.ReferenceHeaderNames)
	}
	if s.opts.Headers {
		resp.ResponseHeadersToAdd = append(resp.ResponseHeadersToAdd, rateLimitHeaders(checks, resp.OverallCode)...)
	}
	if s.opts.DynamicMetadata {
		resp.DynamicMetadata = dynamicMetadata(req, checks)
	}
	return resp, nil
}

// statusBlock is one descriptor's status with the messages it points to, allocated
// together with the response (see newResponse): a decision then allocates its answer at
// once instead of message by message.
type statusBlock struct {
	status rlsv3.RateLimitResponse_DescriptorStatus
	limit  rlsv3.RateLimitResponse_RateLimit
	mult   wrapperspb.UInt32Value
	reset  durationpb.Duration
}

// oneResponse is the response to a request of one descriptor, the common one, in one
// allocation.
type oneResponse struct {
	resp     rlsv3.RateLimitResponse
	statuses [1]*rlsv3.RateLimitResponse_DescriptorStatus
	blocks   [1]statusBlock
}

// newResponse returns the response to checks, its Statuses pointing at zero statuses, and
// points each check's status (and block) at its own: one allocation for one descriptor,
// three for more.
func newResponse(checks []check) *rlsv3.RateLimitResponse {
	var (
		resp     *rlsv3.RateLimitResponse
		statuses []*rlsv3.RateLimitResponse_DescriptorStatus
		blocks   []statusBlock
	)
	if len(checks) == 1 {
		one := new(oneResponse)
		resp, statuses, blocks = &one.resp, one.statuses[:], one.blocks[:]
	} else {
		resp = new(rlsv3.RateLimitResponse)
		statuses = make([]*rlsv3.RateLimitResponse_DescriptorStatus, len(checks))
		blocks = make([]statusBlock, len(checks))
	}
	for i := range checks {
		b := &blocks[i]
		statuses[i], checks[i].status, checks[i].block = &b.status, &b.status, b
	}
	resp.Statuses = statuses
	return resp
}

// currentLimit is the limit Envoy is told about, in b.
func (b *statusBlock) currentLimit(r *Rule) *rlsv3.RateLimitResponse_RateLimit {
	cl := &b.limit
	cl.Name, cl.RequestsPerUnit, cl.Unit = r.Name, uint32(r.rate.count), r.rate.unit
	if r.rate.multiplier > 1 {
		b.mult.Value = r.rate.multiplier
		cl.UnitMultiplier = &b.mult
	}
	return cl
}

// isQuota reports whether c is decided in quota mode: its rule's quota_mode, or every
// descriptor (those without a rule too) under the global QuotaMode, as
// envoyproxy/ratelimit counts them; an unlimited rule never is.
func (s *Service) isQuota(c *check) bool {
	if c.rule != nil && c.rule.Unlimited {
		return false
	}
	return s.opts.QuotaMode || (c.rule != nil && c.rule.Quota)
}

// dynamicMetadata is what envoyproxy/ratelimit sends back in dynamic_metadata when its
// RESPONSE_DYNAMIC_METADATA is set: the domain, each descriptor (its entries as
// "key=value", its limit override and hits_addend), the request's hits_addend when not 0,
// and under "metadata" the `metadata:` of every rule that passed (not OVER_LIMIT),
// merged: a key already set keeps its value unless both values are mappings, which merge.
func dynamicMetadata(req *rlsv3.RateLimitRequest, checks []check) *structpb.Struct {
	fields := map[string]*structpb.Value{"domain": structpb.NewStringValue(req.GetDomain())}
	descs := make([]*structpb.Value, 0, len(req.GetDescriptors()))
	for _, d := range req.GetDescriptors() {
		df := map[string]*structpb.Value{}
		entries := make([]*structpb.Value, 0, len(d.GetEntries()))
		for _, e := range d.GetEntries() {
			entries = append(entries, structpb.NewStringValue(e.GetKey()+"="+e.GetValue()))
		}
		df["entries"] = structpb.NewListValue(&structpb.ListValue{Values: entries})
		if l := d.GetLimit(); l != nil {
			df["limit"] = structpb.NewStringValue(fmt.Sprint(l))
		}
		if h := d.GetHitsAddend(); h != nil {
			df["hitsAddend"] = structpb.NewNumberValue(float64(h.GetValue()))
		}
		descs = append(descs, structpb.NewStructValue(&structpb.Struct{Fields: df}))
	}
	fields["descriptors"] = structpb.NewListValue(&structpb.ListValue{Values: descs})
	if h := req.GetHitsAddend(); h != 0 {
		fields["hitsAddend"] = structpb.NewNumberValue(float64(h))
	}
	merged := &structpb.Struct{Fields: map[string]*structpb.Value{}}
	for i := range checks {
		c := &checks[i]
		if c.rule != nil && c.rule.Metadata != nil && c.status.Code != rlsv3.RateLimitResponse_OVER_LIMIT {
			mergeStruct(merged, c.rule.Metadata)
		}
	}
	if len(merged.Fields) > 0 {
		fields["metadata"] = structpb.NewStructValue(merged)
	}
	return &structpb.Struct{Fields: fields}
}

// mergeStruct adds src's fields to dst: a field dst has keeps its value, unless both are
// mappings, which merge the same way. src, a rule's, is copied, never shared.
func mergeStruct(dst, src *structpb.Struct) {
	for k, v := range src.GetFields() {
		have, ok := dst.Fields[k]
		switch {
		case !ok:
			dst.Fields[k] = proto.Clone(v).(*structpb.Value)
		case have.GetStructValue() != nil && v.GetStructValue() != nil:
			mergeStruct(have.GetStructValue(), v.GetStructValue())
		}
	}
}
