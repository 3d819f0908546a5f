package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/sim"
)

// Size of the ASCII chart.
const (
	asciiWidth  = 60
	asciiHeight = 10
)

// simFlags are the flags of "ratekit sim" beyond the algorithm's.
type simFlags struct {
	algo     algoFlags
	compare  string
	traffic  string
	duration time.Duration
	interval time.Duration
	mode     string
	maxWait  time.Duration
	svg      string
	charge   string
}

// simRun is one algorithm's simulation.
type simRun struct {
	name string
	a    algo.Algorithm
	rows []sim.Interval
}

func simCommand(args []string, stdout io.Writer) error {
	if isAdaptiveSim(args) { // adaptive-*: a modeled server, flags of its own (sim_adaptive.go)
		return simAdaptiveCommand(args, stdout)
	}
	fs := flag.NewFlagSet("ratekit sim", flag.ContinueOnError)
	var f simFlags
	f.algo.register(fs)
	fs.Lookup("algo").Usage = "algorithm: " + strings.Join(algorithmNames, ", ") + ";\nor " + strings.Join(adaptiveNames, ", ") +
		": a concurrency limit in front of a modeled server,\nwith flags of its own (run \"ratekit sim --algo adaptive-gradient -h\")"
	fs.Lookup("rate").Usage = "permits per second, and the base rate of the traffic\n(windows: the default limit is rate × window)"
	fs.StringVar(&f.compare, "compare", "", "comma-separated algorithms to draw on one chart (instead of --algo)")
	fs.StringVar(&f.traffic, "traffic", "burst", "traffic shape: steady (1.5 × rate), burst (3 × rate at once every 2 s),\nspike (0.5 × rate, 5 × rate in the middle tenth), ramp (0 to 3 × rate)")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "simulated time")
	fs.DurationVar(&f.interval, "interval", time.Second, "width of one row of the table and one step of the charts\n(--duration makes at most 10000 of them)")
	fs.StringVar(&f.mode, "mode", "allow", "allow: a request is granted only if a permit is free now;\nwait: it is granted if it can be served within --max-wait (and counted as delayed)")
	fs.DurationVar(&f.maxWait, "max-wait", time.Second, "longest wait a request accepts in wait mode")
	fs.StringVar(&f.svg, "svg", "", "also write the chart (offered vs admitted over time) to this SVG `file`")
	fs.StringVar(&f.charge, "charge", "", "also charge usage known after the fact (Limiter.Charge): n=N[,every=D][,at=D]\ncharges N permits at D (default 0s), then every D, whatever is left:\nthe debt shows as admitted dropping until it is paid (\"charged\" column, '^' marks)")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	names := []string{f.algo.name}
	if f.compare != "" {
		if explicit(fs, "algo") {
			return usagef("sim: use --algo or --compare, not both")
		}
		var err error
		if names, err = compareNames(f.compare); err != nil {
			return err
		}
	}
	p, err := sim.ParsePattern(f.traffic)
	if err != nil {
		return usagef("%s", simPrefix(err))
	}
	var maxWait time.Duration
	switch f.mode {
	case "allow":
		if explicit(fs, "max-wait") {
			return usagef("sim: --max-wait needs --mode wait")
		}
	case "wait":
		if f.maxWait <= 0 {
			return usagef("sim: --max-wait must be > 0, got %v", f.maxWait)
		}
		maxWait = f.maxWait
	default:
		return usagef("sim: unknown mode %q (want allow or wait)", f.mode)
	}
	var charge sim.Charge
	if f.charge != "" {
		var err error
		if charge, err = sim.ParseCharge(f.charge); err != nil {
			return usagef("sim: --%s", err)
		}
	}
	if f.interval <= 0 {
		return usagef("sim: --interval must be > 0, got %v", f.interval)
	}
	if rows := (f.duration + f.interval - 1) / f.interval; f.duration > 0 && f.duration <= sim.MaxDuration && rows > sim.MaxRows {
		least := (f.duration + sim.MaxRows - 1) / sim.MaxRows
		return usagef("sim: --interval %s is too small for --duration %s: %d intervals, at most %d (use --interval %s or more)",
			sim.FormatDuration(f.interval), sim.FormatDuration(f.duration), rows, sim.MaxRows, sim.FormatDuration(least))
	}
	// Open the SVG file first: a bad path fails before the simulation runs.
	var svg *svgFile
	if f.svg != "" {
		var err error
		if svg, err = openSVG(f.svg); err != nil {
			return err
		}
		defer svg.discard() // unless written
	}

	runs := make([]simRun, len(names))
	for i, name := range names {
		a, err := f.algo.build(name)
		if err != nil {
			return usagef("sim: %s", unwrapUsage(err))
		}
		rows, err := sim.Run(sim.Config{Algorithm: a, Traffic: p, Base: f.algo.rate,
			Duration: f.duration, Interval: f.interval, MaxWait: maxWait, Charge: charge})
		if errors.Is(err, sim.ErrConfig) || errors.Is(err, algo.ErrInvalidConfig) {
			return usagef("%s", simPrefix(err))
		}
		if err != nil {
			return errors.New(simPrefix(err))
		}
		runs[i] = simRun{name: name, a: a, rows: rows}
	}

	setting := fmt.Sprintf("%s traffic at base rate %g/s for %s, %s", p, f.algo.rate, sim.FormatDuration(f.duration), modeText(maxWait))
	if charge.N > 0 {
		setting += ", " + charge.String()
	}
	title, subtitle := fmt.Sprint(runs[0].a), setting
	if len(runs) == 1 {
		printTable(stdout, title+", "+setting, runs[0].rows, maxWait > 0, charge.N > 0)
	} else {
		title = fmt.Sprintf("%s traffic: admitted by algorithm", p)
		subtitle = fmt.Sprintf("base rate %g/s for %s; %s; %s", f.algo.rate, sim.FormatDuration(f.duration), paramsText(runs), modeText(maxWait))
		if charge.N > 0 {
			subtitle += "; " + charge.String()
		}
		printCompare(stdout, setting, runs, maxWait > 0, charge.N > 0)
	}
	names = names[:0]
	rowSets := make([][]sim.Interval, len(runs))
	for i, r := range runs {
		names = append(names, r.name)
		rowSets[i] = r.rows
	}
	chart, err := sim.NewChart(title, subtitle, f.interval, names, rowSets)
	if err != nil {
		return errors.New(simPrefix(err))
	}
	fmt.Fprintln(stdout)
	if err := chart.WriteASCII(stdout, asciiWidth, asciiHeight); err != nil {
		return err
	}
	if svg != nil {
		if err := svg.write(chart); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\nwrote %s\n", f.svg)
	}
	return nil
}

// compareNames splits and checks the list of --compare.
func compareNames(list string) ([]string, error) {
	names := strings.Split(list, ",")
	seen := map[string]bool{}
	for i, n := range names {
		n = strings.TrimSpace(n)
		names[i] = n
		if seen[n] {
			return nil, usagef("sim: --compare names %q twice", n)
		}
		seen[n] = true
	}
	return names, nil
}

// simPrefix returns err's message starting with "sim: " once: the errors of package sim
// carry it already.
func simPrefix(err error) string {
	if msg := err.Error(); strings.HasPrefix(msg, "sim: ") {
		return msg
	}
	return "sim: " + err.Error()
}

// svgFile is the --svg file, opened before the simulation runs.
type svgFile struct {
	path    string
	f       *os.File
	created bool // by openSVG: removed again if the chart is not written
	done    bool
}

// openSVG opens path for writing without truncating it, so that a path that cannot be
// written fails at once and a failed run leaves an existing file as it was.
func openSVG(path string) (*svgFile, error) {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o666)
	if err != nil {
		return nil, fmt.Errorf("sim: --svg: %w", err)
	}
	return &svgFile{path: path, f: f, created: errors.Is(statErr, os.ErrNotExist)}, nil
}

// svgChart is what --svg writes: a sim.Chart, or the chart.Chart of an adaptive run.
type svgChart interface{ WriteSVG(io.Writer) error }

// write replaces the file's content with chart and closes it.
func (s *svgFile) write(chart svgChart) error {
	s.done = true
	err := s.f.Truncate(0)
	if err == nil {
		err = chart.WriteSVG(s.f)
	}
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sim: writing %s: %w", s.path, err)
	}
	return nil
}

// discard closes the file if write was not called, and removes it if openSVG created it.
func (s *svgFile) discard() {
	if s.done {
		return
	}
	_ = s.f.Close()
	if s.created {
		_ = os.Remove(s.path)
	}
}

// modeText describes the mode for titles.
func modeText(maxWait time.Duration) string {
	if maxWait > 0 {
		return "wait mode (max wait " + sim.FormatDuration(maxWait) + ")"
	}
	return "allow mode"
}

// paramsText lists the parameters the compared algorithms were given, each once.
func paramsText(runs []simRun) string {
	var parts []string
	seen := map[string]bool{}
	for _, r := range runs {
		s := fmt.Sprint(r.a)
		if i := strings.IndexByte(s, '('); i >= 0 {
			s = strings.TrimSuffix(s[i+1:], ")")
		}
		for _, p := range strings.Split(s, ", ") {
			if !seen[p] {
				seen[p] = true
				parts = append(parts, p)
			}
		}
	}
	return strings.Join(parts, ", ")
}

// printTable writes one line per interval of one simulation, then the totals.
func printTable(w io.Writer, title string, rows []sim.Interval, wait, charged bool) {
	fmt.Fprintln(w, title)
	fmt.Fprintf(w, "%8s %8s %8s %8s %8s", "time", "offered", "admitted", "delayed", "denied")
	if wait {
		fmt.Fprintf(w, " %10s %10s", "mean delay", "max delay")
	}
	if charged {
		fmt.Fprintf(w, " %8s", "charged")
	}
	fmt.Fprintln(w)
	line := func(label string, r sim.Interval) {
		fmt.Fprintf(w, "%8s %8d %8d %8d %8d", label, r.Offered, r.Admitted, r.Delayed, r.Denied())
		if wait {
			fmt.Fprintf(w, " %10s %10s", sim.FormatDuration(r.MeanDelay()), sim.FormatDuration(r.MaxDelay))
		}
		if charged {
			fmt.Fprintf(w, " %8d", r.Charged)
		}
		fmt.Fprintln(w)
	}
	for _, r := range rows {
		line(sim.FormatDuration(r.Start), r)
	}
	line("total", sim.Sum(rows))
}

// printCompare writes the admitted counts of several simulations of the same traffic side
// by side, one line per interval, then a summary line per algorithm.
func printCompare(w io.Writer, title string, runs []simRun, wait, charged bool) {
	fmt.Fprintln(w, title)
	fmt.Fprintln(w, "admitted per interval:")
	fmt.Fprintf(w, "%8s %8s", "time", "offered")
	if charged {
		fmt.Fprintf(w, " %8s", "charged")
	}
	for _, r := range runs {
		fmt.Fprintf(w, " %*s", max(8, len(r.name)), r.name)
	}
	fmt.Fprintln(w)
	row := func(label string, i int, pick func([]sim.Interval, int) sim.Interval) {
		fmt.Fprintf(w, "%8s %8d", label, pick(runs[0].rows, i).Offered)
		if charged {
			fmt.Fprintf(w, " %8d", pick(runs[0].rows, i).Charged)
		}
		for _, r := range runs {
			fmt.Fprintf(w, " %*d", max(8, len(r.name)), pick(r.rows, i).Admitted)
		}
		fmt.Fprintln(w)
	}
	for i, r := range runs[0].rows {
		row(sim.FormatDuration(r.Start), i, func(rows []sim.Interval, i int) sim.Interval { return rows[i] })
	}
	row("total", 0, func(rows []sim.Interval, _ int) sim.Interval { return sim.Sum(rows) })

	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-40s %8s %8s %8s", "algorithm", "admitted", "delayed", "denied")
	if wait {
		fmt.Fprintf(w, " %10s %10s", "mean delay", "max delay")
	}
	fmt.Fprintln(w)
	for _, r := range runs {
		t := sim.Sum(r.rows)
		fmt.Fprintf(w, "%-40s %8d %8d %8d", fmt.Sprint(r.a), t.Admitted, t.Delayed, t.Denied())
		if wait {
			fmt.Fprintf(w, " %10s %10s", sim.FormatDuration(t.MeanDelay()), sim.FormatDuration(t.MaxDelay))
		}
		fmt.Fprintln(w)
	}
}
