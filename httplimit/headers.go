package httplimit

import (
	"net/http"
	"strconv"
	"time"

	"github.com/ratekit/limiter/algo"
)

// Header names the middleware writes.
const (
	headerPolicy     = "RateLimit-Policy"
	headerRateLimit  = "RateLimit"
	headerRetryAfter = "Retry-After"
)

// sfMaxInt is the largest Integer a Structured Field may carry (RFC 9651, Section 3.3.1:
// at most 15 digits). Limits up to 2^53 are clamped to it; no real quota gets near.
const sfMaxInt = 999_999_999_999_999

// ceilSeconds rounds a non-negative duration up to whole seconds, clamped to sfMaxInt.
// Durations are integers, so the rounding is exact: 1s stays 1, 1s+1ns is 2.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return min(s, sfMaxInt)
}

// retryAfterSeconds is the Retry-After value for a RetryAfter that is not algo.Never: the
// wait in whole seconds rounded up, and at least 1, since "Retry-After: 0" invites the
// client to come straight back and be denied again.
func retryAfterSeconds(d time.Duration) int64 {
	return max(1, ceilSeconds(d))
}

// policyWindow is the "w" of RateLimit-Policy for a: its Quota's Window (the span over
// which it grants its Limit from a fresh start) in whole seconds rounded up, at least 1.
// ok is false when the algorithm states no such span (SmoothWarmingUp, whose rate depends
// on how warm it is, and algorithms without a Quota): w is then left out, as the draft
// allows. algo.QuotaOf looks through algo.Named and other wrappers.
func policyWindow(a algo.Algorithm) (w int64, ok bool) {
	q, ok := algo.QuotaOf(a)
	switch {
	case !ok || q.Window <= 0:
		return 0, false
	case q.Window == algo.Never: // longer than a Duration holds
		return sfMaxInt, true
	}
	return max(1, ceilSeconds(q.Window)), true
}

// sfInt clamps a count to the range of a Structured Field Integer that the draft allows
// here (non-negative).
func sfInt(n int64) int64 {
	return min(max(n, 0), sfMaxInt)
}

// policyValue formats RateLimit-Policy: `"name";q=100;w=60`. name is already an sf-string
// (quoted and escaped, see quoteName).
func policyValue(name string, q, w int64, hasW bool) string {
	b := make([]byte, 0, len(name)+40)
	b = append(b, name...)
	b = append(b, ";q="...)
	b = strconv.AppendInt(b, sfInt(q), 10)
	if hasW {
		b = append(b, ";w="...)
		b = strconv.AppendInt(b, w, 10)
	}
	return string(b)
}

// rateLimitValue formats RateLimit: `"name";r=42;t=17`, leaving t out when hasT is false.
func rateLimitValue(name string, r, t int64, hasT bool) string {
	b := make([]byte, 0, len(name)+40)
	b = append(b, name...)
	b = append(b, ";r="...)
	b = strconv.AppendInt(b, sfInt(r), 10)
	if hasT {
		b = append(b, ";t="...)
		b = strconv.AppendInt(b, t, 10)
	}
	return string(b)
}

// quoteName makes a policy name an sf-string (RFC 9651, Section 3.3.3): characters outside
// printable ASCII (0x20 to 0x7E) are dropped, '"' and '\' are escaped, and the result is
// quoted. A name left empty becomes "default".
func quoteName(name string) string {
	b := make([]byte, 0, len(name)+2)
	b = append(b, '"')
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c < 0x20 || c > 0x7e:
			continue
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		default:
			b = append(b, c)
		}
	}
	if len(b) == 1 {
		return `"` + DefaultPolicyName + `"`
	}
	return string(append(b, '"'))
}

// addRateLimitHeaders adds RateLimit-Policy and RateLimit for an answered decision d of
// algorithm a. t is the effective window in seconds, or -1 to leave it out. The fields are
// added, not set: both are lists, which may be split over several field lines, so nested
// middlewares each contribute their own policy item.
func addRateLimitHeaders(h http.Header, name string, a algo.Algorithm, d algo.Decision, t int64) {
	w, hasW := policyWindow(a)
	h.Add(headerPolicy, policyValue(name, d.Limit, w, hasW))
	h.Add(headerRateLimit, rateLimitValue(name, d.Remaining, t, t >= 0))
}

// resetSeconds is the RateLimit "t" of an allowed decision: ResetAfter (how long until the
// key is back to a fresh state, with the whole quota available) minus the time already
// spent waiting for a reservation, rounded up; -1 (left out) when it is algo.Never.
func resetSeconds(d algo.Decision, waited time.Duration) int64 {
	if d.ResetAfter >= algo.Never {
		return -1
	}
	return ceilSeconds(d.ResetAfter - waited)
}
