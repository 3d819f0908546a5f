// Package rlheader formats the RateLimit-Policy and RateLimit fields of
// draft-ietf-httpapi-ratelimit-headers-11 from a limiter's decisions: one item per policy
// (per rule of a composite), with q, qu, w, r, t and pk. httplimit writes them as HTTP
// headers, grpclimit as metadata; keeping the arithmetic here keeps the two identical.
package rlheader

import (
	"strconv"
	"time"

	"github.com/ratekit/limiter/algo"
)

// Field names.
const (
	PolicyField    = "RateLimit-Policy"
	RateLimitField = "RateLimit"
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

// RetryAfterSeconds is the Retry-After value for a RetryAfter that is not algo.Never: the
// wait in whole seconds rounded up, and at least 1, since "Retry-After: 0" invites the
// client to come straight back and be denied again.
func RetryAfterSeconds(d time.Duration) int64 {
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

// Item is one policy's part of a response: its RateLimit-Policy item (name, q, w) and,
// when hasR, its RateLimit item (r, t).
type Item struct {
	Name string // an sf-string, quoted and escaped (see QuoteName)
	Q    int64
	W    int64 // seconds; ≤ 0: left out
	R    int64
	T    int64 // seconds; < 0: left out
	HasR bool
}

// PolicyValue formats a RateLimit-Policy item: `"name";q=100;qu="content-bytes";w=60;pk=:…:`,
// the parameters in the order of the draft's examples. qu is a quoted sf-string, "" for
// the default unit (requests); pk a Byte Sequence (":base64:"), "" when not sent.
func PolicyValue(it Item, qu, pk string) string {
	b := make([]byte, 0, len(it.Name)+len(qu)+len(pk)+40)
	b = append(b, it.Name...)
	b = append(b, ";q="...)
	b = strconv.AppendInt(b, sfInt(it.Q), 10)
	if qu != "" {
		b = append(b, ";qu="...)
		b = append(b, qu...)
	}
	if it.W > 0 {
		b = append(b, ";w="...)
		b = strconv.AppendInt(b, it.W, 10)
	}
	return string(appendPK(b, pk))
}

// RateLimitValue formats a RateLimit item: `"name";r=42;t=17;pk=:…:`.
func RateLimitValue(it Item, pk string) string {
	b := make([]byte, 0, len(it.Name)+len(pk)+40)
	b = append(b, it.Name...)
	b = append(b, ";r="...)
	b = strconv.AppendInt(b, sfInt(it.R), 10)
	if it.T >= 0 {
		b = append(b, ";t="...)
		b = strconv.AppendInt(b, sfInt(it.T), 10)
	}
	return string(appendPK(b, pk))
}

func appendPK(b []byte, pk string) []byte {
	if pk == "" {
		return b
	}
	return append(append(b, ";pk="...), pk...)
}

// QuoteName makes a policy name an sf-string (RFC 9651, Section 3.3.3): characters outside
// printable ASCII (0x20 to 0x7E) are dropped, '"' and '\' are escaped, and the result is
// quoted. A name left empty becomes DefaultName.
func QuoteName(name string) string {
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
		return `"` + DefaultName + `"`
	}
	return string(append(b, '"'))
}

// DefaultName is the policy name of a limiter of one rule unless its caller names it.
const DefaultName = "default"

// Add adds RateLimit-Policy and RateLimit with add (http.Header.Add, or a metadata
// append), one field line per item of items. The fields are added, not set: both are
// lists, which may be split over several field lines, so nested middlewares each
// contribute their own policy items.
func Add(add func(name, value string), items []Item, qu, pk string) {
	for _, it := range items {
		add(PolicyField, PolicyValue(it, qu, pk))
	}
	for _, it := range items {
		if it.HasR {
			add(RateLimitField, RateLimitValue(it, pk))
		}
	}
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
