package main

import (
	"flag"
	"math"
	"strings"
	"time"

	"github.com/ratekit/limiter/algo"
)

// algorithmNames lists the algorithms by their kebab-case names, in the order help shows.
var algorithmNames = []string{
	"fixed-window", "sliding-log", "sliding-counter", "token-bucket", "leaky-bucket", "gcra",
	"smooth-bursty", "smooth-warmup",
}

// algoFlags are the parameters any algorithm may take; each uses the ones it needs.
type algoFlags struct {
	name   string
	rate   float64
	burst  int64
	limit  int64
	window time.Duration
	warmup time.Duration
}

// register declares the algorithm flags on fs.
func (f *algoFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.name, "algo", "token-bucket", "algorithm: "+strings.Join(algorithmNames, ", "))
	fs.Float64Var(&f.rate, "rate", 10, "permits per second (windows: the default limit is rate × window)")
	fs.Int64Var(&f.burst, "burst", 0, "burst (token-bucket, gcra, smooth-bursty) or capacity (leaky-bucket); 0 means the rate")
	fs.Int64Var(&f.limit, "limit", 0, "permits per window (fixed-window, sliding-log, sliding-counter); 0 means rate × window")
	fs.DurationVar(&f.window, "window", time.Second, "window length (fixed-window, sliding-log, sliding-counter)")
	fs.DurationVar(&f.warmup, "warmup", 2*time.Second, "warm-up period (smooth-warmup)")
}

// build returns the config of the algorithm called name with the flags' parameters.
// Burst defaults to the rate (one second's worth), Limit to rate × window; smooth-bursty
// saves up burst/rate seconds of unused rate. Errors are usage errors.
func (f algoFlags) build(name string) (algo.Algorithm, error) {
	if !(f.rate > 0) || math.IsInf(f.rate, 0) {
		return nil, usagef("--rate must be a positive number, got %v", f.rate)
	}
	if f.burst < 0 || f.limit < 0 {
		return nil, usagef("--burst and --limit must be ≥ 0, got %d and %d", f.burst, f.limit)
	}
	burst := f.burst
	if burst == 0 {
		burst = max(1, int64(math.Round(f.rate)))
	}
	limit := f.limit
	if limit == 0 {
		limit = max(1, int64(math.Round(f.rate*f.window.Seconds())))
	}
	var a algo.Algorithm
	switch name {
	case "fixed-window":
		a = algo.FixedWindow{Limit: limit, Window: f.window}
	case "sliding-log":
		a = algo.SlidingWindowLog{Limit: limit, Window: f.window}
	case "sliding-counter":
		a = algo.SlidingWindowCounter{Limit: limit, Window: f.window}
	case "token-bucket":
		a = algo.TokenBucket{Rate: f.rate, Burst: burst}
	case "leaky-bucket":
		a = algo.LeakyBucket{Rate: f.rate, Capacity: burst}
	case "gcra":
		a = algo.GCRA{Rate: f.rate, Burst: burst}
	case "smooth-bursty":
		a = algo.SmoothBursty{Rate: f.rate, MaxBurstSeconds: float64(burst) / f.rate}
	case "smooth-warmup":
		a = algo.SmoothWarmingUp{Rate: f.rate, Warmup: f.warmup}
	default:
		return nil, usagef("unknown algorithm %q (want one of %s)", name, strings.Join(algorithmNames, ", "))
	}
	if err := a.Validate(); err != nil {
		return nil, usagef("%s: %v", name, err)
	}
	return a, nil
}

// explicit reports whether the flag called name was set on the command line.
func explicit(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
