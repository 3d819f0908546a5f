package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/ratekit/limiter/algo"
)

// Charge is usage charged on top of the traffic (Config.Charge), as a server charges what
// a response turned out to cost: N permits at At, then every Every (0: once), each with
// algo.Request.Charge, so recorded whatever is left. What the key cannot pay is debt, and
// the chart shows the admitted line drop and come back as it is paid. The zero Charge
// charges nothing.
type Charge struct {
	N     int64         // permits per charge, in [1, 2^53]
	At    time.Duration // offset of the first charge, in [0, Duration)
	Every time.Duration // time between two charges; 0: one charge
}

// maxCharge is the largest N of a charge (algo.Request.Validate).
const maxCharge = 1 << 53

// ParseCharge reads "n=N[,every=D][,at=D]": N permits at D (default 0s), then every D.
func ParseCharge(s string) (Charge, error) {
	var c Charge
	seen := map[string]bool{}
	for _, field := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(field), "=")
		if !ok || seen[k] {
			return Charge{}, fmt.Errorf("charge %q: want n=N[,every=D][,at=D], each once", s)
		}
		seen[k] = true
		var err error
		switch k {
		case "n":
			c.N, err = strconv.ParseInt(v, 10, 64)
		case "every":
			c.Every, err = time.ParseDuration(v)
		case "at":
			c.At, err = time.ParseDuration(v)
		default:
			return Charge{}, fmt.Errorf("charge %q: unknown field %q (want n, every, at)", s, k)
		}
		if err != nil {
			return Charge{}, fmt.Errorf("charge %q: %s=%s is not a number or a duration", s, k, v)
		}
	}
	if !seen["n"] || c.N < 1 || c.N > maxCharge {
		return Charge{}, fmt.Errorf("charge %q: n must be in [1, 2^53]", s)
	}
	return c, nil
}

// String describes c for titles: "charge 50 every 10s from 2s", "charge 50 at 2s".
func (c Charge) String() string {
	if c.N == 0 {
		return "no charge"
	}
	if c.Every > 0 {
		return fmt.Sprintf("charge %d every %s from %s", c.N, FormatDuration(c.Every), FormatDuration(c.At))
	}
	return fmt.Sprintf("charge %d at %s", c.N, FormatDuration(c.At))
}

// instants returns the offsets of c's charges in a run of length d, after checking c
// against a (errors wrap ErrConfig).
func (c Charge) instants(a algo.Algorithm, d time.Duration) ([]time.Duration, error) {
	switch {
	case c.N == 0:
		return nil, nil
	case c.N < 0 || c.N > maxCharge:
		return nil, fmt.Errorf("%w: a charge must be in [1, 2^53] permits, got %d", ErrConfig, c.N)
	case c.At < 0 || c.At >= d:
		return nil, fmt.Errorf("%w: the first charge, at %v, is outside the run [0, %v)", ErrConfig, c.At, d)
	case c.Every < 0:
		return nil, fmt.Errorf("%w: charges must be ≥ 0 apart, got %v", ErrConfig, c.Every)
	case c.Every > 0 && (d-c.At)/c.Every >= MaxArrivals:
		return nil, fmt.Errorf("%w: a charge every %v for %v makes more than %d charges", ErrConfig, c.Every, d, MaxArrivals)
	case algo.CapabilitiesOf(a)&algo.Chargeable == 0:
		return nil, fmt.Errorf("%w: %s cannot be charged (it does not state algo.Chargeable)", ErrConfig, a.Name())
	}
	out := []time.Duration{c.At}
	for c.Every > 0 {
		next := out[len(out)-1] + c.Every
		if next >= d {
			break
		}
		out = append(out, next)
	}
	return out, nil
}
