package server

import (
	"errors"
	"fmt"
	"strings"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/ratekit/limiter/algo"
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

// envoyUnits are the units a window is named in, largest first: a rate string's window
// becomes the largest unit that divides it, times a multiplier.
var envoyUnits = []rlsv3.RateLimitResponse_RateLimit_Unit{
	rlsv3.RateLimitResponse_RateLimit_YEAR, rlsv3.RateLimitResponse_RateLimit_MONTH,
	rlsv3.RateLimitResponse_RateLimit_WEEK, rlsv3.RateLimitResponse_RateLimit_DAY,
	rlsv3.RateLimitResponse_RateLimit_HOUR, rlsv3.RateLimitResponse_RateLimit_MINUTE,
	rlsv3.RateLimitResponse_RateLimit_SECOND,
}

// maxWindow is the longest window: the longest span the algorithms compute
// (algo.MaxMicros, about 31.7 years).
const maxWindow = time.Duration(algo.MaxMicros) * time.Microsecond

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

// newRate is count per multiplier × unit, or an error when the window is longer than
// maxWindow.
func newRate(count int64, u rlsv3.RateLimitResponse_RateLimit_Unit, multiplier uint64) (rate, error) {
	span, ok := unitSpan[u]
	switch {
	case !ok:
		return rate{}, fmt.Errorf("unknown unit %v", u)
	case multiplier < 1:
		return rate{}, errors.New("the unit multiplier must be at least 1")
	case multiplier > uint64(maxWindow/span):
		return rate{}, fmt.Errorf("%d × %s is longer than the longest window, %d %ss", multiplier, strings.ToLower(u.String()), maxWindow/span, strings.ToLower(u.String()))
	}
	return rate{count: count, unit: u, multiplier: uint32(multiplier)}, nil
}

// parseRate reads a rate string of our extension with algo.ParseQuota ("100/min",
// "5/10s", "1000 per hour") and names its window in Envoy's units, as current_limit
// reports it: the largest unit that divides the window, times a multiplier. A window that
// is not a whole number of seconds ("100/500ms") has no such name and is refused.
func parseRate(s string) (rate, error) {
	q, err := algo.ParseQuota(s)
	if err != nil {
		return rate{}, err
	}
	if q.Limit > maxCount {
		return rate{}, fmt.Errorf("rate %q: the limit must be at most %d (the protocol's uint32)", s, uint64(maxCount))
	}
	for _, u := range envoyUnits {
		if span := unitSpan[u]; q.Window%span == 0 {
			return newRate(q.Limit, u, uint64(q.Window/span))
		}
	}
	return rate{}, fmt.Errorf("rate %q: the period must be a whole number of seconds (Envoy's current_limit names it in seconds, minutes, hours or days)", s)
}

// maxCount bounds requests_per_unit and rate counts: the proto carries them as uint32.
const maxCount = 1<<32 - 1
