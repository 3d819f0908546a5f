package server

import (
	"fmt"
	"strconv"
	"time"

	"github.com/ratekit/limiter/algo"
)

// defaultAlgorithm is envoyproxy/ratelimit's: a counter per epoch-aligned window.
const defaultAlgorithm = "fixed-window"

// algorithmNames are the values of our `algorithm:` key, the algorithms' own names.
var algorithmNames = []string{"fixed-window", "sliding-window-counter", "sliding-window-log", "token-bucket", "gcra", "leaky-bucket"}

func knownAlgorithm(name string) bool {
	for _, n := range algorithmNames {
		if n == name {
			return true
		}
	}
	return false
}

// hasBurst reports whether the algorithm takes our `burst:` key.
func hasBurst(name string) bool {
	return name == "token-bucket" || name == "gcra" || name == "leaky-bucket"
}

// buildAlgorithm turns a rule's rate into the algorithm that enforces it. The window
// algorithms grant count per window; the buckets refill count per window (count/window
// per second) and hold burst at once, count unless burst is given.
func buildAlgorithm(name string, r rate, burst int64) (algo.Algorithm, error) {
	w := r.window()
	if burst == 0 {
		burst = r.count
	}
	perSecond := float64(r.count) / w.Seconds()
	var a algo.Algorithm
	switch name {
	case "fixed-window":
		a = algo.FixedWindow{Limit: r.count, Window: w}
	case "sliding-window-counter":
		a = algo.SlidingWindowCounter{Limit: r.count, Window: w}
	case "sliding-window-log":
		a = algo.SlidingWindowLog{Limit: r.count, Window: w}
	case "token-bucket":
		a = algo.TokenBucket{Rate: perSecond, Burst: burst}
	case "gcra":
		a = algo.GCRA{Rate: perSecond, Burst: burst}
	case "leaky-bucket":
		a = algo.LeakyBucket{Rate: perSecond, Capacity: burst}
	default:
		return nil, fmt.Errorf("unknown algorithm %q", name)
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	return a, nil
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
