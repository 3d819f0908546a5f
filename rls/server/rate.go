package server

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
)

// unitSpan is the length of each unit of envoyproxy/ratelimit's format. A month is 30 days
// and a year 365, as envoyproxy/ratelimit counts them: fixed windows aligned to the epoch
// cannot follow the calendar.
var unitSpan = map[rlsv3.RateLimitResponse_RateLimit_Unit]time.Duration{
	rlsv3.RateLimitResponse_RateLimit_SECOND: time.Second,
	rlsv3.RateLimitResponse_RateLimit_MINUTE: time.Minute,
	rlsv3.RateLimitResponse_RateLimit_HOUR:   time.Hour,
	rlsv3.RateLimitResponse_RateLimit_DAY:    24 * time.Hour,
	rlsv3.RateLimitResponse_RateLimit_WEEK:   7 * 24 * time.Hour,
	rlsv3.RateLimitResponse_RateLimit_MONTH:  30 * 24 * time.Hour,
	rlsv3.RateLimitResponse_RateLimit_YEAR:   365 * 24 * time.Hour,
}

// unitNames maps the `unit:` of the YAML format (lower case, as envoyproxy/ratelimit
// writes it; upper case is accepted too) to the proto's unit.
var unitNames = map[string]rlsv3.RateLimitResponse_RateLimit_Unit{
	"second": rlsv3.RateLimitResponse_RateLimit_SECOND,
	"minute": rlsv3.RateLimitResponse_RateLimit_MINUTE,
	"hour":   rlsv3.RateLimitResponse_RateLimit_HOUR,
	"day":    rlsv3.RateLimitResponse_RateLimit_DAY,
	"week":   rlsv3.RateLimitResponse_RateLimit_WEEK,
	"month":  rlsv3.RateLimitResponse_RateLimit_MONTH,
	"year":   rlsv3.RateLimitResponse_RateLimit_YEAR,
}

// rateUnits are the unit spellings a rate string accepts after the slash.
var rateUnits = map[string]rlsv3.RateLimitResponse_RateLimit_Unit{
	"s": rlsv3.RateLimitResponse_RateLimit_SECOND, "sec": rlsv3.RateLimitResponse_RateLimit_SECOND, "second": rlsv3.RateLimitResponse_RateLimit_SECOND,
	"m": rlsv3.RateLimitResponse_RateLimit_MINUTE, "min": rlsv3.RateLimitResponse_RateLimit_MINUTE, "minute": rlsv3.RateLimitResponse_RateLimit_MINUTE,
	"h": rlsv3.RateLimitResponse_RateLimit_HOUR, "hr": rlsv3.RateLimitResponse_RateLimit_HOUR, "hour": rlsv3.RateLimitResponse_RateLimit_HOUR,
	"d": rlsv3.RateLimitResponse_RateLimit_DAY, "day": rlsv3.RateLimitResponse_RateLimit_DAY,
	"w": rlsv3.RateLimitResponse_RateLimit_WEEK, "week": rlsv3.RateLimitResponse_RateLimit_WEEK,
}

// maxMultiplier bounds a unit multiplier so that the window stays far below what a
// time.Duration holds (292 years) whatever the unit.
const maxMultiplier = 100

// rate is a limit of count requests per multiplier × unit.
type rate struct {
	count      int64
	unit       rlsv3.RateLimitResponse_RateLimit_Unit
	multiplier uint32 // ≥ 1
}

// window is the span the count is granted over.
func (r rate) window() time.Duration {
	return unitSpan[r.unit] * time.Duration(r.multiplier)
}

// parseRate reads a rate string of our extension, `COUNT/[MULTIPLIER]UNIT`: "100/min",
// "5/10s", "1000/hour", "20/s". Units are s|sec|second, m|min|minute, h|hr|hour, d|day and
// w|week, with an optional plural s. Spaces around the parts are allowed.
//
// It is not algo.ParseQuota: a response names its limit in Envoy's units
// (current_limit{requests_per_unit, unit}), so a window must be a whole number of one of
// them ("100/500ms" has none), and a count of 0 (deny everything) is valid here.
func parseRate(s string) (rate, error) {
	countPart, unitPart, ok := strings.Cut(s, "/")
	if !ok {
		return rate{}, fmt.Errorf("%q is not COUNT/UNIT, e.g. 100/min or 5/10s", s)
	}
	count, err := strconv.ParseInt(strings.TrimSpace(countPart), 10, 64)
	if err != nil || count < 0 || count > maxCount {
		return rate{}, fmt.Errorf("%q: the count must be a whole number in [0, %d]", s, maxCount)
	}
	unitPart = strings.TrimSpace(unitPart)
	digits := 0
	for digits < len(unitPart) && unitPart[digits] >= '0' && unitPart[digits] <= '9' {
		digits++
	}
	mult := uint64(1)
	if digits > 0 {
		mult, err = strconv.ParseUint(unitPart[:digits], 10, 32)
		if err != nil || mult < 1 || mult > maxMultiplier {
			return rate{}, fmt.Errorf("%q: the multiplier must be in [1, %d]", s, maxMultiplier)
		}
	}
	name := strings.ToLower(strings.TrimSpace(unitPart[digits:]))
	u, ok := rateUnits[name]
	if !ok && len(name) > 1 && strings.HasSuffix(name, "s") {
		u, ok = rateUnits[strings.TrimSuffix(name, "s")]
	}
	if !ok {
		return rate{}, fmt.Errorf("%q: unknown unit %q (want s, min, h, d or w)", s, name)
	}
	return rate{count: count, unit: u, multiplier: uint32(mult)}, nil
}

// maxCount bounds requests_per_unit and rate counts: the proto carries them as uint32.
const maxCount = 1<<32 - 1
