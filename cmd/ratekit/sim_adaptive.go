package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/ratekit/limiter/adaptive"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/adaptivesim"
	"github.com/ratekit/limiter/internal/sim"
)

// adaptiveNames are the algorithms of "ratekit sim" that limit concurrency, not rate.
var adaptiveNames = []string{"adaptive-aimd", "adaptive-gradient"}

// isAdaptiveSim reports whether args ask for an adaptive simulation: --algo names one of
// adaptiveNames. Such a run has flags of its own (a modeled server instead of a traffic
// pattern), so simCommand hands it over before parsing.
func isAdaptiveSim(args []string) bool {
	for i, a := range args {
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "algo" {
			continue
		}
		if !hasValue && i+1 < len(args) {
			value = args[i+1]
		}
		return strings.HasPrefix(value, "adaptive-")
	}
	return false
}

// simAdaptiveFlags are the flags of an adaptive "ratekit sim".
type simAdaptiveFlags struct {
	algo     string
	capacity int
	latency  time.Duration
	load     float64
	duration time.Duration
	interval time.Duration
	dropAt   time.Duration
	dropTo   int
	slowAt   time.Duration
	slowTo   time.Duration
	timeout  time.Duration
	compare  bool
	small    int
	big      int
	svg      string
}

func simAdaptiveCommand(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("ratekit sim", flag.ContinueOnError)
	var f simAdaptiveFlags
	fs.StringVar(&f.algo, "algo", "adaptive-gradient", "algorithm: "+strings.Join(adaptiveNames, ", "))
	fs.IntVar(&f.capacity, "capacity", 100, "the modeled server's workers: its true concurrency capacity")
	fs.DurationVar(&f.latency, "latency", 50*time.Millisecond, "the time a worker takes to serve one request")
	fs.Float64Var(&f.load, "load", 3, "offered load, as a multiple of what the workers serve (capacity / latency per second)")
	fs.DurationVar(&f.duration, "duration", 60*time.Second, "simulated time")
	fs.DurationVar(&f.interval, "interval", time.Second, "width of one row of the table and one step of the chart")
	fs.DurationVar(&f.dropAt, "drop-at", 0, "when the capacity changes to --drop-to (0: never)")
	fs.IntVar(&f.dropTo, "drop-to", 0, "the capacity after --drop-at; 0 means half of --capacity")
	fs.DurationVar(&f.slowAt, "slow-at", 0, "when the service time changes to --slow-to, for good (0: never)")
	fs.DurationVar(&f.slowTo, "slow-to", 0, "the service time after --slow-at, ≥ --latency; 0 means 3 × --latency")
	fs.DurationVar(&f.timeout, "timeout", 0, "adaptive-aimd counts a request slower than this as a drop; 0 means 1.2 × --latency")
	fs.BoolVar(&f.compare, "compare", false, "also run a fixed limit that is too small (--small) and one too big (--big)")
	fs.IntVar(&f.small, "small", 0, "the too-small fixed limit of --compare; 0 means half of --capacity")
	fs.IntVar(&f.big, "big", 0, "the too-big fixed limit of --compare; 0 means 3 × --capacity")
	fs.StringVar(&f.svg, "svg", "", "also write the chart (limit and latency over time) to this SVG `file`")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if f.capacity < 1 {
		return usagef("sim: --capacity must be ≥ 1, got %d", f.capacity)
	}
	if f.dropTo == 0 {
		f.dropTo = max(1, f.capacity/2)
	}
	if f.slowTo == 0 {
		f.slowTo = 3 * f.latency
	}
	if f.timeout == 0 {
		f.timeout = f.latency * 12 / 10
	}
	if f.small == 0 {
		f.small = max(1, f.capacity/2)
	}
	if f.big == 0 {
		f.big = 3 * f.capacity
	}
	main, err := adaptiveAlgorithm(f.algo, f.timeout)
	if err != nil {
		return err
	}
	type run struct {
		name string
		a    adaptive.Algorithm
	}
	runs := []run{{f.algo, main}}
	if f.compare {
		runs = append(runs, run{fmt.Sprintf("fixed %d (too small)", f.small), adaptive.Fixed{Limit: f.small}},
			run{fmt.Sprintf("fixed %d (too big)", f.big), adaptive.Fixed{Limit: f.big}})
	}
	var svg *svgFile
	if f.svg != "" {
		if svg, err = openSVG(f.svg); err != nil {
			return err
		}
		defer svg.discard() // unless written
	}
	results := make([]adaptivesim.Result, len(runs))
	for i, r := range runs {
		cfg := adaptivesim.Config{Algorithm: r.a, Capacity: f.capacity, Latency: f.latency, Load: f.load,
			Duration: f.duration, Interval: f.interval, DropAt: f.dropAt, DropTo: f.dropTo, SlowAt: f.slowAt, SlowTo: f.slowTo}
		rows, err := adaptivesim.Run(cfg)
		if errors.Is(err, adaptivesim.ErrConfig) || errors.Is(err, algo.ErrInvalidConfig) {
			return usagef("sim: %s", strings.TrimPrefix(strings.TrimPrefix(err.Error(), "adaptivesim: "), "limiter: "))
		}
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		results[i] = adaptivesim.Result{Name: r.name, Rows: rows}
	}
	setting := fmt.Sprintf("server of %d workers, %s per request, offered %g× what it serves (%.0f/s), for %s",
		f.capacity, sim.FormatDuration(f.latency), f.load, float64(f.capacity)/f.latency.Seconds()*f.load, sim.FormatDuration(f.duration))
	if f.dropAt > 0 {
		setting += fmt.Sprintf("; capacity %d from %s", f.dropTo, sim.FormatDuration(f.dropAt))
	}
	if f.slowAt > 0 {
		setting += fmt.Sprintf("; %s per request from %s", sim.FormatDuration(f.slowTo), sim.FormatDuration(f.slowAt))
	}
	fmt.Fprintf(stdout, "%v\n%s\n", main, setting)
	if len(results) == 1 {
		printAdaptiveTable(stdout, results[0].Rows)
	} else {
		printAdaptiveCompare(stdout, results)
	}
	if svg != nil {
		title := fmt.Sprintf("%s: in-flight limit and latency", f.algo)
		if f.compare {
			title = fmt.Sprintf("%s against fixed limits: in-flight limit and latency", f.algo)
		}
		chart, err := adaptivesim.NewChart(title, setting, f.interval, f.latency, results)
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
		if err := svg.write(chart); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nwrote %s\n", f.svg)
	}
	return nil
}

// adaptiveAlgorithm returns the config of the adaptive algorithm called name.
func adaptiveAlgorithm(name string, timeout time.Duration) (adaptive.Algorithm, error) {
	switch name {
	case "adaptive-aimd":
		return adaptive.AIMD{Timeout: timeout}, nil
	case "adaptive-gradient":
		return adaptive.Gradient{}, nil
	}
	return nil, usagef("unknown algorithm %q (want one of %s)", name, strings.Join(adaptiveNames, ", "))
}

// printAdaptiveTable writes one line per interval of one simulation, then the totals.
func printAdaptiveTable(w io.Writer, rows []adaptivesim.Interval) {
	fmt.Fprintf(w, "%8s %8s %8s %8s %8s %9s %8s %10s %10s\n", "time", "offered", "admitted", "shed", "limit", "in-flight", "capacity", "latency", "max lat")
	var t adaptivesim.Interval
	for _, r := range rows {
		fmt.Fprintf(w, "%8s %8d %8d %8d %8.1f %9d %8d %10s %10s\n", sim.FormatDuration(r.Start), r.Offered, r.Admitted, r.Shed,
			r.Limit, r.MaxInFlight, r.Capacity, sim.FormatDuration(roundMs(r.MeanLatency())), sim.FormatDuration(roundMs(r.MaxLatency)))
		t.Offered += r.Offered
		t.Admitted += r.Admitted
		t.Shed += r.Shed
		t.Completed += r.Completed
		t.TotalLatency += r.TotalLatency
		t.MaxLatency = max(t.MaxLatency, r.MaxLatency)
	}
	fmt.Fprintf(w, "%8s %8d %8d %8d %8s %9s %8s %10s %10s\n", "total", t.Offered, t.Admitted, t.Shed, "", "", "",
		sim.FormatDuration(roundMs(t.MeanLatency())), sim.FormatDuration(roundMs(t.MaxLatency)))
}

// printAdaptiveCompare writes the admitted count, mean limit and mean latency of several
// simulations side by side, one line per interval.
func printAdaptiveCompare(w io.Writer, runs []adaptivesim.Result) {
	fmt.Fprintf(w, "%8s %8s", "", "")
	for _, r := range runs {
		fmt.Fprintf(w, " | %-26s", r.Name)
	}
	fmt.Fprintf(w, "\n%8s %8s", "time", "offered")
	for range runs {
		fmt.Fprintf(w, " | %8s %7s %9s", "admitted", "limit", "latency")
	}
	fmt.Fprintln(w)
	for i, r0 := range runs[0].Rows {
		fmt.Fprintf(w, "%8s %8d", sim.FormatDuration(r0.Start), r0.Offered)
		for _, r := range runs {
			row := r.Rows[i]
			fmt.Fprintf(w, " | %8d %7.1f %9s", row.Admitted, row.Limit, sim.FormatDuration(roundMs(row.MeanLatency())))
		}
		fmt.Fprintln(w)
	}
}

// roundMs rounds d to 0.1 ms for the table.
func roundMs(d time.Duration) time.Duration {
	return time.Duration(math.Round(float64(d)/1e5)) * 100 * time.Microsecond
}
