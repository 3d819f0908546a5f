package main

import (
	"flag"
	"math"
	"strings"
	"time"

	"github.com/ratekit/limiter/algo"
)

// algorithms is the CLI's table of algorithms, in the order help lists them: one line per
// algorithm, the config its flags make. The config's Name is the --algo value that selects it.
var algorithms = []func(p params) algo.Algorithm{
	func(p params) algo.Algorithm { return algo.FixedWindow{Limit: p.limit, Window: p.window} },
	func(p params) algo.Algorithm { return algo.SlidingWindowLog{Limit: p.limit, Window: p.window} },
	func(p params) algo.Algorithm { return algo.SlidingWindowCounter{Limit: p.limit, Window: p.window} },
	func(p params) algo.Algorithm { return algo.TokenBucket{Rate: p.rate, Burst: p.burst} },
	func(p params) algo.Algorithm { return algo.LeakyBucket{Rate: p.rate, Capacity: p.burst} },
	func(p params) algo.Algorithm { return algo.GCRA{Rate: p.rate, Burst: p.burst} },
	func(p params) algo.Algorithm { return algo.SmoothBursty{Rate: p.rate, MaxBurstSeconds: p.burstSecs} },
	func(p params) algo.Algorithm { return algo.SmoothWarmingUp{Rate: p.rate, Warmup: p.warmup} },
}

// params are the algorithm flags; build applies their defaults before a line of the table
// makes its config from them.
type params struct {
	rate   float64
	burst  int64 // burst or capacity; --burst, else the rate rounded (one second's worth)
	limit  int64 // permits per window; --limit, else rate × window rounded
	window time.Duration
	warmup time.Duration

	burstSecs float64 // set by build: burst / rate, the seconds of unused rate smooth-bursty saves up
}

// algorithmNames lists the table's names, in its order.
var algorithmNames = func() []string {
	names := make([]string, len(algorithms))
	for i, mk := range algorithms {
		names[i] = mk(params{}).Name()
	}
	return names
}()

// algoFlags are the parameters any algorithm may take; each uses the ones it needs.
type algoFlags struct {
	name string
	params
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
	p := f.params
	if p.burst == 0 {
		p.burst = max(1, int64(math.Round(f.rate)))
	}
	if p.limit == 0 {
		p.limit = max(1, int64(math.Round(f.rate*f.window.Seconds())))
	}
	p.burstSecs = float64(p.burst) / p.rate
	var a algo.Algorithm
	for _, mk := range algorithms {
		if c := mk(p); c.Name() == name {
			a = c
			break
		}
	}
	if a == nil {
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
