package server

import (
	"cmp"
	"math"
	"strconv"
	"strings"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/ratekit/limiter/algo"
)

// sfMaxInt is the largest Integer a Structured Field may carry (RFC 9651, 3.3.1).
const sfMaxInt = 999_999_999_999_999

// rateLimitHeaders are the IETF RateLimit-Policy and RateLimit fields
// (draft-ietf-httpapi-ratelimit-headers) for the descriptors that a limit decided, one
// list item each, named after the rule (its name, else its statistics path); and
// Retry-After on OVER_LIMIT, the longest wait among the descriptors over their limit.
// Envoy adds them to the response it sends the client.
func rateLimitHeaders(checks []check, overall rlsv3.RateLimitResponse_Code) []*corev3.HeaderValue {
	var policy, state []string
	retry := int64(-1)
	for i := range checks {
		c := &checks[i]
		if c.rule == nil || c.rule.Unlimited || c.status == nil {
			continue
		}
		name := quoteName(c.rule)
		q := min(c.rule.rate.count, sfMaxInt)
		w := min(clampSeconds(c.rule.Window()), sfMaxInt)
		policy = append(policy, name+";q="+strconv.FormatInt(q, 10)+";w="+strconv.FormatInt(w, 10))
		item := name + ";r=" + strconv.FormatInt(min(max(c.d.Remaining, 0), sfMaxInt), 10)
		t := int64(-1)
		if c.d.ResetAfter > 0 && c.d.ResetAfter < algo.Never {
			t = min(clampSeconds(c.d.ResetAfter), sfMaxInt)
		}
		if c.status.Code == rlsv3.RateLimitResponse_OVER_LIMIT {
			// A denial's t is its Retry-After, as httplimit sends it (the draft's Section
			// 6): the time until the request could pass, not until the key is fresh.
			wait := c.d.RetryAfter
			if wait >= algo.Never || wait <= 0 {
				wait = c.d.ResetAfter
			}
			t = -1
			if wait > 0 && wait < algo.Never {
				t = min(max(1, clampSeconds(wait)), sfMaxInt)
				retry = max(retry, t)
			}
		}
		if t >= 0 {
			item += ";t=" + strconv.FormatInt(t, 10)
		}
		state = append(state, item)
	}
	if len(policy) == 0 {
		return nil
	}
	hs := []*corev3.HeaderValue{
		{Key: "RateLimit-Policy", Value: strings.Join(policy, ", ")},
		{Key: "RateLimit", Value: strings.Join(state, ", ")},
	}
	if overall == rlsv3.RateLimitResponse_OVER_LIMIT && retry > 0 {
		hs = append(hs, &corev3.HeaderValue{Key: "Retry-After", Value: strconv.FormatInt(retry, 10)})
	}
	return hs
}

// quoteName is the rule's name as an sf-string: printable ASCII only, '"' and '\'
// escaped.
func quoteName(r *Rule) string {
	name := r.Name
	if name == "" {
		name = r.id
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c < 0x20 || c > 0x7e:
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// ReferenceHeaderNames are the names of envoyproxy/ratelimit's response headers
// (its LIMIT_LIMIT_HEADER, LIMIT_REMAINING_HEADER and LIMIT_RESET_HEADER).
type ReferenceHeaderNames struct {
	// Limit carries the requests_per_unit of the descriptor closest to its limit; the
	// default is "RateLimit-Limit", envoyproxy/ratelimit's.
	Limit string
	// Remaining carries its limit_remaining; the default is "RateLimit-Remaining".
	Remaining string
	// Reset carries the seconds until its window resets; the default is
	// "RateLimit-Reset".
	Reset string
}

// referenceHeaders are envoyproxy/ratelimit's response headers (LIMIT_RESPONSE_HEADERS_ENABLED):
// the limit, the remaining count and the seconds to the reset of one descriptor: the one
// with the least remaining among those with a limit, or the last one OVER_LIMIT that is
// not in quota mode, as it picks them.
func referenceHeaders(checks []check, isQuota func(*check) bool, names ReferenceHeaderNames) []*corev3.HeaderValue {
	var pick *check
	least := uint32(math.MaxUint32)
	for i := range checks {
		c := &checks[i]
		st := c.status
		if st.GetCurrentLimit() != nil && st.GetLimitRemaining() < least {
			pick, least = c, st.GetLimitRemaining()
		}
		if st.GetCode() == rlsv3.RateLimitResponse_OVER_LIMIT && !isQuota(c) {
			pick, least = c, 0
		}
	}
	if pick == nil || pick.status.GetCurrentLimit() == nil {
		return nil
	}
	st := pick.status
	return []*corev3.HeaderValue{
		{Key: cmp.Or(names.Limit, "RateLimit-Limit"), Value: strconv.FormatUint(uint64(st.GetCurrentLimit().GetRequestsPerUnit()), 10)},
		{Key: cmp.Or(names.Remaining, "RateLimit-Remaining"), Value: strconv.FormatUint(uint64(st.GetLimitRemaining()), 10)},
		{Key: cmp.Or(names.Reset, "RateLimit-Reset"), Value: strconv.FormatInt(clampSeconds(st.GetDurationUntilReset().AsDuration()), 10)},
	}
}
