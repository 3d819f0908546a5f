package server

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"time"

	"github.com/ratekit/limiter/algo"
)

// defaultAlgorithm is envoyproxy/ratelimit's: a counter per epoch-aligned window.
var defaultAlgorithm = algo.FixedWindow{}.Name()

// algorithms are the values of our `algorithm:` key: algo's names, which algo.FromQuota
// builds, and the long names of earlier releases as aliases. burst tells the algorithms
// that take our `burst:` key (a bucket holds burst at once and refills the rule's count
// per window). This is the module's one list of algorithm names.
var algorithms = []struct {
	name, alias string
	burst       bool
}{
	{name: algo.FixedWindow{}.Name()},
	{name: algo.SlidingWindowCounter{}.Name(), alias: "sliding-window-counter"},
	{name: algo.SlidingWindowLog{}.Name(), alias: "sliding-window-log"},
	{name: algo.TokenBucket{}.Name(), burst: true},
	{name: algo.GCRA{}.Name(), burst: true},
	{name: algo.LeakyBucket{}.Name(), burst: true},
}

// algorithmName returns algo's name for a value of `algorithm:` (an alias gives the name
// it stands for), and whether that algorithm takes a burst; ok is false for an unknown one.
func algorithmName(s string) (name string, burst, ok bool) {
	for _, a := range algorithms {
		if s == a.name || (a.alias != "" && s == a.alias) {
			return a.name, a.burst, true
		}
	}
	return "", false, false
}

// algorithmList names the values of `algorithm:` for error messages.
func algorithmList() string {
	names := make([]string, 0, len(algorithms))
	for _, a := range algorithms {
		n := a.name
		if a.alias != "" {
			n += " (or " + a.alias + ")"
		}
		names = append(names, n)
	}
	return strings.Join(names, ", ")
}

// burstAlgorithms names the algorithms that take a burst, for error messages.
func burstAlgorithms() string {
	var names []string
	for _, a := range algorithms {
		if a.burst {
			names = append(names, a.name)
		}
	}
	return strings.Join(names, ", ")
}

// buildAlgorithm turns a rule's rate into the algorithm called name (algo's name) that
// enforces it, through algo.FromQuota: the window algorithms grant count per window; the
// buckets refill count per window and hold burst at once (count when burst is 0). A burst
// other than the count is the quota of burst permits earned back at the same rate: over
// window × burst / count, rounded up to the nanosecond, so the rate never exceeds the
// rule's.
func buildAlgorithm(name string, r rate, burst int64) (algo.Algorithm, error) {
	q := algo.Quota{Limit: r.count, Window: r.window()}
	if burst > 0 && burst != r.count {
		hi, lo := bits.Mul64(uint64(q.Window), uint64(burst))
		if hi >= uint64(r.count) {
			return nil, fmt.Errorf("%w: burst %d is too large for %d per %v", algo.ErrInvalidConfig, burst, r.count, q.Window)
		}
		w, rem := bits.Div64(hi, lo, uint64(r.count))
		if rem > 0 {
			w++
		}
		if w > math.MaxInt64 {
			return nil, fmt.Errorf("%w: burst %d is too large for %d per %v", algo.ErrInvalidConfig, burst, r.count, q.Window)
		}
		q = algo.Quota{Limit: burst, Window: time.Duration(w)}
	}
	return algo.FromQuota(name, q)
}

// algorithmID identifies an algorithm's config, so that rules with the same one share a
// Limiter.
func algorithmID(a algo.Algorithm) string {
	return fmt.Sprintf("%s %v", a.Name(), a)
}

func itoa(i int) string { return strconv.Itoa(i) }

// untilWindowEnd is how long from now (µs since the epoch) until the end of the
// epoch-aligned window of length w that holds now.
func untilWindowEnd(now time.Time, w time.Duration) time.Duration {
	us := now.UnixMicro()
	wu := w.Microseconds()
	return time.Duration(wu-us%wu) * time.Microsecond
}
