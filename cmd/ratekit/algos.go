package main

import (
	"errors"
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
	name  string
	quota quotaFlag
	params
	fs *flag.FlagSet // the flags were registered on, to tell the ones set
}

// quotaFlag is --quota: a rate string, read by algo.ParseQuota as the flag is parsed.
type quotaFlag struct {
	q       algo.Quota
	applied bool // set by useQuota
}

func (f *quotaFlag) String() string {
	if f == nil || f.q == (algo.Quota{}) {
		return ""
	}
	return f.q.String()
}

func (f *quotaFlag) Set(s string) error {
	q, err := algo.ParseQuota(s)
	if err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), algo.ErrInvalidConfig.Error()+": "))
	}
	f.q = q
	return nil
}

// register declares the algorithm flags on fs.
func (f *algoFlags) register(fs *flag.FlagSet) {
	f.fs = fs
	fs.StringVar(&f.name, "algo", "token-bucket", "algorithm: "+strings.Join(algorithmNames, ", "))
	fs.Var(&f.quota, "quota", "the limit and its period as a `rate` string, such as 100/min, 100/10s, \"100 per hour\" or 100-M:\n"+
		"the limit is the burst (or capacity) and the limit per window, the rate is limit/period,\n"+
		"the window is the period (instead of --rate, --burst, --limit and --window)")
	fs.Float64Var(&f.rate, "rate", 10, "permits per second (windows: the default limit is rate × window)")
	fs.Int64Var(&f.burst, "burst", 0, "burst (token-bucket, gcra, smooth-bursty) or capacity (leaky-bucket), ≥ 1;\nby default the rate, rounded (one second's worth)")
	fs.Int64Var(&f.limit, "limit", 0, "permits per window (fixed-window, sliding-log, sliding-counter), ≥ 1;\nby default rate × window, rounded")
	fs.DurationVar(&f.window, "window", time.Second, "window length (fixed-window, sliding-log, sliding-counter)")
	fs.DurationVar(&f.warmup, "warmup", 2*time.Second, "warm-up period (smooth-warmup)")
}

// build returns the config of the algorithm called name with the flags' parameters.
// Burst defaults to the rate (one second's worth), Limit to rate × window; smooth-bursty
// saves up burst/rate seconds of unused rate. --quota L/W sets them all: Burst and Limit
// L, Window W, Rate L/W, as algo.FromQuota makes them. Errors are usage errors.
func (f *algoFlags) build(name string) (algo.Algorithm, error) {
	if err := f.useQuota(); err != nil {
		return nil, err
	}
	if !(f.rate > 0) || math.IsInf(f.rate, 0) {
		return nil, usagef("--rate must be a positive number, got %v", f.rate)
	}
	// 0 is not "the default": the library refuses a Burst or Limit of 0, and so do we.
	for _, c := range []struct {
		name string
		v    int64
	}{{"burst", f.burst}, {"limit", f.limit}} {
		if c.v < 0 || c.v == 0 && f.set(c.name) {
			return nil, usagef("--%s must be ≥ 1 (leave it out for its default), got %d", c.name, c.v)
		}
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

// useQuota applies --quota to the other parameters, refusing them beside it; it is done
// once.
func (f *algoFlags) useQuota() error {
	q := f.quota.q
	if q == (algo.Quota{}) || f.quota.applied {
		return nil
	}
	for _, name := range []string{"rate", "burst", "limit", "window"} {
		if f.set(name) {
			return usagef("use --quota or --%s, not both", name)
		}
	}
	f.rate, f.burst, f.limit, f.window = float64(q.Limit)/q.Window.Seconds(), q.Limit, q.Limit, q.Window
	f.quota.applied = true
	return nil
}

// set reports whether the flag called name was set on the command line.
func (f *algoFlags) set(name string) bool { return f.fs != nil && explicit(f.fs, name) }

// explicit reports whether the flag called name was set on the command line.
func explicit(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
