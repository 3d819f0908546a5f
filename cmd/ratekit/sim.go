package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/sim"
)

// algoFlags are the parameters any algorithm may take; each uses the ones it needs.
type algoFlags struct {
	name   string
	rate   float64
	burst  int64
	limit  int64
	window time.Duration
}

// algorithmNames lists the algorithms by their kebab-case names, in the order help shows.
var algorithmNames = []string{"fixed-window", "sliding-log", "sliding-counter", "token-bucket", "leaky-bucket", "gcra"}

// build turns the flags into an algorithm config. Burst defaults to the rate (one second's
// worth), Limit to rate × window.
func (f algoFlags) build() (algo.Algorithm, error) {
	burst := f.burst
	if burst == 0 {
		burst = max(1, int64(math.Round(f.rate)))
	}
	limit := f.limit
	if limit == 0 {
		limit = max(1, int64(math.Round(f.rate*f.window.Seconds())))
	}
	var a algo.Algorithm
	switch f.name {
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
	default:
		return nil, usagef("unknown algorithm %q (want one of %s)", f.name, strings.Join(algorithmNames, ", "))
	}
	if err := a.Validate(); err != nil {
		return nil, usagef("%v", err)
	}
	return a, nil
}

func simCommand(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ratekit sim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var af algoFlags
	fs.StringVar(&af.name, "algo", "token-bucket", "algorithm: "+strings.Join(algorithmNames, ", "))
	fs.Float64Var(&af.rate, "rate", 10, "permits per second (token-bucket, leaky-bucket, gcra; windows: limit = rate × window)")
	fs.Int64Var(&af.burst, "burst", 0, "burst or capacity (default: the rate)")
	fs.Int64Var(&af.limit, "limit", 0, "permits per window (default: rate × window)")
	fs.DurationVar(&af.window, "window", time.Second, "window length")
	traffic := fs.String("traffic", "burst", "traffic: steady, burst, spike, ramp")
	duration := fs.Duration("duration", 10*time.Second, "simulated time")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return err
		}
		return usagef("sim: %v", err)
	}
	if fs.NArg() > 0 {
		return usagef("sim: unexpected argument %q", fs.Arg(0))
	}
	a, err := af.build()
	if err != nil {
		return err
	}
	p, err := sim.ParsePattern(*traffic)
	if err != nil {
		return usagef("sim: %v", err)
	}
	rows, err := sim.Run(sim.Config{Algorithm: a, Traffic: p, Base: af.rate, Duration: *duration})
	if err != nil {
		return usagef("sim: %v", err)
	}
	printTable(stdout, fmt.Sprintf("%v, traffic %s, %v", a, p, *duration), rows)
	return nil
}

// printTable writes one line per interval with an ASCII bar of the admitted share.
func printTable(w io.Writer, title string, rows []sim.Interval) {
	peak := 1
	for _, r := range rows {
		peak = max(peak, r.Offered)
	}
	const barWidth = 40
	fmt.Fprintln(w, title)
	fmt.Fprintf(w, "%8s %8s %8s %8s  %s\n", "time", "offered", "admitted", "denied", "█ admitted  ░ denied")
	var offered, admitted int
	for _, r := range rows {
		offered += r.Offered
		admitted += r.Admitted
		a := r.Admitted * barWidth / peak
		d := r.Offered*barWidth/peak - a
		fmt.Fprintf(w, "%8v %8d %8d %8d  %s%s\n", r.Start, r.Offered, r.Admitted, r.Offered-r.Admitted,
			strings.Repeat("█", a), strings.Repeat("░", max(0, d)))
	}
	fmt.Fprintf(w, "%8s %8d %8d %8d\n", "total", offered, admitted, offered-admitted)
}
