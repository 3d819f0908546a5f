package algo

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseQuota reads a rate string: a limit, a separator and a period. The limit is a
// whole number of permits in [1, 2^53]. The separator is "/", " per " or ulule/limiter's
// "-". The period is a unit ("s", "sec", "second", "m", "min", "minute", "h", "hour",
// "d", "day", any case, plural allowed; ulule's "S", "M", "H", "D"), a count and a unit
// ("10s", "10 seconds", "2d", "500ms"), or a Go duration ("1m30s", "1.5h"):
//
//	100/s  100/sec  100/min  100/hour  100/d  100/10s  100/500ms  100 per minute  100-M
//
// The window must be a whole number of microseconds, from 1µs to [MaxMicros] µs (about
// 31.7 years), as the window algorithms require. Anything else (an empty string, a zero or
// negative limit, an overflow, an unknown unit, trailing text) is an error wrapping
// [ErrInvalidConfig] that quotes s. Spaces around s are ignored. [Quota.String] writes a
// string that ParseQuota reads back to the same Quota.
func ParseQuota(s string) (Quota, error) {
	q, problem := parseQuota(strings.TrimSpace(s))
	if problem != "" {
		return Quota{}, fmt.Errorf("%w: rate %q: %s (want a limit and a period, such as \"100/s\", \"100/10s\", \"100 per minute\" or \"100-M\")",
			ErrInvalidConfig, s, problem)
	}
	return q, nil
}

// parseQuota parses a trimmed rate string, or says what is wrong with it.
func parseQuota(s string) (Quota, string) {
	if s == "" {
		return Quota{}, "empty"
	}
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 {
		return Quota{}, "the limit must be a whole number"
	}
	limit, err := strconv.ParseInt(s[:i], 10, 64)
	if err != nil || limit > maxExact {
		return Quota{}, "the limit must be at most 2^53"
	}
	if limit == 0 {
		return Quota{}, "the limit must be at least 1"
	}
	var period string
	switch rest := s[i:]; {
	case strings.HasPrefix(rest, "/"), strings.HasPrefix(rest, "-"):
		period = rest[1:]
	case len(rest) > 0 && rest[0] == ' ' && strings.HasPrefix(strings.ToLower(strings.TrimLeft(rest, " ")), "per "):
		period = strings.TrimLeft(strings.TrimLeft(rest, " ")[len("per "):], " ")
	case rest == "":
		return Quota{}, "no period"
	default:
		return Quota{}, "the limit must be followed by \"/\", \" per \" or \"-\""
	}
	w, problem := parsePeriod(period)
	if problem != "" {
		return Quota{}, problem
	}
	switch {
	case w < time.Microsecond:
		return Quota{}, "the period must be at least 1µs"
	case w > maxSpan:
		return Quota{}, fmt.Sprintf("the period must be at most %v", maxSpan)
	case w%time.Microsecond != 0:
		return Quota{}, "the period must be a whole number of microseconds"
	}
	return Quota{Limit: limit, Window: w}, ""
}

// units are the period units ParseQuota knows by name, lower case; "ms" and "us" let
// "500ms" and "100 per 250 ms" read as they do with a count.
var units = map[string]time.Duration{
	"us": time.Microsecond, "µs": time.Microsecond,
	"ms": time.Millisecond, "millisecond": time.Millisecond,
	"s": time.Second, "sec": time.Second, "second": time.Second,
	"m": time.Minute, "min": time.Minute, "minute": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hour": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour,
}

// unit returns the length of a named unit (any case; a plural "s" is allowed on the words).
func unit(name string) (time.Duration, bool) {
	name = strings.ToLower(name)
	if d, ok := units[name]; ok {
		return d, true
	}
	if len(name) > 3 && strings.HasSuffix(name, "s") {
		d, ok := units[name[:len(name)-1]]
		return d, ok
	}
	return 0, false
}

// parsePeriod reads a period: a unit, a count and a unit, or a Go duration.
func parsePeriod(p string) (time.Duration, string) {
	if p == "" {
		return 0, "no period"
	}
	i := 0
	for i < len(p) && p[i] >= '0' && p[i] <= '9' {
		i++
	}
	if d, ok := unit(strings.TrimLeft(p[i:], " ")); ok {
		if i == 0 {
			if p[0] == ' ' {
				return 0, fmt.Sprintf("unknown period %q", p)
			}
			return d, ""
		}
		n, err := strconv.ParseInt(p[:i], 10, 64)
		switch {
		case err != nil || n > math.MaxInt64/int64(d):
			return 0, "the period is too long"
		case n == 0:
			return 0, "the period must be longer than 0"
		}
		return time.Duration(n) * d, ""
	}
	if p[0] < '0' || p[0] > '9' {
		return 0, fmt.Sprintf("unknown period %q", p)
	}
	d, err := time.ParseDuration(p) // "1m30s", "1.5h", what Quota.String writes
	if err != nil {
		return 0, fmt.Sprintf("unknown period %q", p)
	}
	if d <= 0 {
		return 0, "the period must be longer than 0"
	}
	return d, ""
}

// String writes q as ParseQuota reads it: "100/s", "100/m", "100/h", "100/d" for one unit,
// "100/2d" for whole days, else the limit and the Window as time.Duration writes it
// ("100/10s", "100/1m30s", "100/500ms").
func (q Quota) String() string {
	l := strconv.FormatInt(q.Limit, 10)
	switch q.Window {
	case time.Second:
		return l + "/s"
	case time.Minute:
		return l + "/m"
	case time.Hour:
		return l + "/h"
	}
	const day = 24 * time.Hour
	if q.Window > 0 && q.Window%day == 0 {
		if q.Window == day {
			return l + "/d"
		}
		return l + "/" + strconv.FormatInt(int64(q.Window/day), 10) + "d"
	}
	return l + "/" + q.Window.String()
}

// FromQuota returns the algorithm called name (its Name, such as "gcra") granting q: Limit
// permits at once, earned back over Window, so that [QuotaOf] gives q back (the buckets'
// Window within a nanosecond, as it rounds Limit/Rate up). The window algorithms take q
// as it is; TokenBucket, GCRA and LeakyBucket take Limit as their Burst (or Capacity) and
// Limit/Window as their Rate; SmoothBursty saves up Window's worth of that Rate.
// SmoothWarmingUp has no window, so it is not made from a Quota. The config is validated:
// an unknown name or a quota the algorithm cannot hold (a GCRA faster than 1e6 per
// second) is an error wrapping [ErrInvalidConfig].
//
// One function rather than a constructor per algorithm: a config file or a command line
// names the algorithm and the rate as two strings, and Go code can as well write the
// config struct itself.
func FromQuota(name string, q Quota) (Algorithm, error) {
	if q.Limit <= 0 || q.Window <= 0 {
		return nil, fmt.Errorf("%w: FromQuota(%q, %v): the limit and the window must be > 0", ErrInvalidConfig, name, q)
	}
	rate := float64(q.Limit) / q.Window.Seconds()
	var a Algorithm
	switch name {
	case FixedWindow{}.Name():
		a = FixedWindow{Limit: q.Limit, Window: q.Window}
	case SlidingWindowLog{}.Name():
		a = SlidingWindowLog{Limit: q.Limit, Window: q.Window}
	case SlidingWindowCounter{}.Name():
		a = SlidingWindowCounter{Limit: q.Limit, Window: q.Window}
	case TokenBucket{}.Name():
		a = TokenBucket{Rate: rate, Burst: q.Limit}
	case LeakyBucket{}.Name():
		a = LeakyBucket{Rate: rate, Capacity: q.Limit}
	case GCRA{}.Name():
		a = GCRA{Rate: rate, Burst: q.Limit}
	case SmoothBursty{}.Name():
		a = SmoothBursty{Rate: rate, MaxBurstSeconds: q.Window.Seconds()}
	default:
		return nil, fmt.Errorf("%w: FromQuota: no algorithm %q is made from a quota (want fixed-window, sliding-log, sliding-counter, token-bucket, leaky-bucket, gcra or smooth-bursty)",
			ErrInvalidConfig, name)
	}
	if err := a.Validate(); err != nil {
		return nil, fmt.Errorf("FromQuota(%q, %v): %w", name, q, err)
	}
	return a, nil
}
