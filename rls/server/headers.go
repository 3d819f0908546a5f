package server

import (
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
		if c.d.ResetAfter > 0 && c.d.ResetAfter < algo.Never {
			item += ";t=" + strconv.FormatInt(min(clampSeconds(c.d.ResetAfter), sfMaxInt), 10)
		}
		state = append(state, item)
		if c.status.Code == rlsv3.RateLimitResponse_OVER_LIMIT {
			wait := c.d.RetryAfter
			if wait >= algo.Never || wait <= 0 {
				wait = c.d.ResetAfter
			}
			if wait > 0 && wait < algo.Never {
				retry = max(retry, max(1, clampSeconds(wait)))
			}
		}
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
