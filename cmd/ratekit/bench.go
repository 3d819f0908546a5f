package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/bench"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// benchPrefix starts every Redis key the bench writes, so that it never touches the keys
// of an application sharing the Redis. The keys expire on their own.
const benchPrefix = "ratekit-bench:"

// pingTimeout bounds the check that a Redis can be reached before the run.
const pingTimeout = 3 * time.Second

// benchFlags are the flags of "ratekit bench" beyond the algorithm's.
type benchFlags struct {
	algo       algoFlags
	store      string
	cluster    string
	goroutines int
	duration   time.Duration
	keys       int
}

func benchCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("ratekit bench", flag.ContinueOnError)
	var f benchFlags
	f.algo.register(fs)
	fs.StringVar(&f.store, "store", "memory", "memory (the in-process store), or the URL of a Redis:\nredis://[user:password@]host:port[/db] (rediss:// for TLS), or of a Redis Cluster:\nredis+cluster://[user:password@]host:port[,host:port...] (rediss+cluster:// for TLS);\nkeys are prefixed \""+benchPrefix+"\"")
	fs.StringVar(&f.cluster, "cluster", "", "the nodes of a Redis Cluster, `host:port,host:port,...` (one that answers is enough\nto find the others): the same as --store redis+cluster://host:port,...")
	fs.IntVar(&f.goroutines, "goroutines", 64, "concurrent callers")
	fs.DurationVar(&f.duration, "duration", 10*time.Second, "length of the run (Ctrl-C stops it early and prints what it measured)")
	fs.IntVar(&f.keys, "keys", 1000, "distinct keys, each call picks one at random")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	switch {
	case f.goroutines <= 0 || f.goroutines > 1_000_000:
		return usagef("bench: --goroutines must be in [1, 1000000], got %d", f.goroutines)
	case f.keys <= 0 || f.keys > 100_000_000:
		return usagef("bench: --keys must be in [1, 100000000], got %d", f.keys)
	case f.duration <= 0:
		return usagef("bench: --duration must be > 0, got %v", f.duration)
	case explicit(fs, "cluster") && explicit(fs, "store"):
		return usagef("bench: use --store or --cluster, not both")
	case explicit(fs, "cluster"):
		if strings.Contains(f.cluster, "://") {
			return usagef("bench: --cluster takes host:port,host:port,... (a URL goes to --store), got %q", f.cluster)
		}
		f.store = "redis+cluster://" + f.cluster
	}
	a, err := f.algo.build(f.algo.name)
	if err != nil {
		return usagef("bench: %s", unwrapUsage(err))
	}
	st, where, closeStore, err := openStore(ctx, f.store, f.goroutines)
	if err != nil {
		return err
	}
	defer closeStore()

	cfg := bench.Config{Store: st, Algorithm: a, Goroutines: f.goroutines, Keys: f.keys, Duration: f.duration}
	var bar *progressBar
	if isTerminal(stderr) {
		bar = &progressBar{w: stderr, total: f.duration}
		cfg.Progress = bar.draw
	}
	res, err := bench.Run(ctx, cfg)
	if bar != nil {
		bar.clear()
	}
	if err != nil {
		return usagef("bench: %v", err)
	}
	printBench(stdout, fmt.Sprintf("%v on %s: %d goroutines, %d keys", a, where, f.goroutines, f.keys), res)
	switch {
	case res.Interrupted:
		return errInterrupted
	case res.Errors > 0:
		return fmt.Errorf("bench: %d calls failed; the first: %w", res.Errors, res.FirstError)
	}
	return nil
}

// openStore returns the store named by spec ("memory" or a Redis URL), a description of it
// for the summary and the function that closes it. A Redis is pinged first: a URL that
// does not parse is a usage error, a Redis that does not answer an error (exit status 1).
func openStore(ctx context.Context, spec string, goroutines int) (store.Store, string, func(), error) {
	if spec == "memory" {
		s, err := local.New()
		if err != nil {
			return nil, "", nil, fmt.Errorf("bench: %w", err)
		}
		return s, "memory", func() { _ = s.Close() }, nil
	}
	if isClusterURL(spec) {
		return openCluster(ctx, spec, goroutines)
	}
	if !strings.Contains(spec, "://") {
		return nil, "", nil, usagef("bench: unknown store %q (want memory, redis://host:port[/db] or redis+cluster://host:port,...)", spec)
	}
	opts, err := redis.ParseURL(spec)
	if err != nil {
		return nil, "", nil, usagef("bench: bad Redis URL %q: %v", spec, err)
	}
	opts.ContextTimeoutEnabled = true
	if opts.PoolSize == 0 {
		opts.PoolSize = goroutines // measure the store, not a wait for a connection
	}
	if err := ping(ctx, opts); err != nil {
		if ctx.Err() != nil {
			return nil, "", nil, errInterrupted
		}
		return nil, "", nil, fmt.Errorf("bench: cannot reach Redis at %s: %w", opts.Addr, err)
	}
	client := redis.NewClient(opts)
	s, err := distributed.New(client, distributed.WithPrefix(benchPrefix))
	if err != nil {
		_ = client.Close()
		return nil, "", nil, fmt.Errorf("bench: %w", err)
	}
	where := "redis " + opts.Addr
	if opts.DB != 0 {
		where = fmt.Sprintf("%s db %d", where, opts.DB)
	}
	return s, where, func() { _ = s.Close(); _ = client.Close() }, nil
}

// discardLogger drops go-redis's log lines (main installs it before anything else runs):
// ratekit reports errors itself, on one line, and the lines go-redis writes on its own to
// stderr when a dial fails would break that.
type discardLogger struct{}

func (discardLogger) Printf(context.Context, string, ...any) {}

// ping checks with one PING, without retries, that the Redis of opts answers within
// pingTimeout, so that an unreachable Redis is reported at once.
func ping(ctx context.Context, opts *redis.Options) error {
	probe := *opts
	probe.MaxRetries = -1 // no retry
	probe.DialerRetries = 1
	probe.PoolSize = 1
	c := redis.NewClient(&probe)
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	return c.Ping(ctx).Err()
}

// printBench writes the summary of a run.
func printBench(w io.Writer, title string, r bench.Result) {
	fmt.Fprintln(w, title)
	status := ""
	if r.Interrupted {
		status = " (interrupted)"
	}
	fmt.Fprintf(w, "  duration    %s%s\n", fmtLatency(r.Elapsed), status)
	fmt.Fprintf(w, "  decisions   %d (%.0f/s)\n", r.Decisions, r.Rate())
	fmt.Fprintf(w, "  admitted    %d (%.2f%%)\n", r.Admitted, 100*r.AdmittedRatio())
	fmt.Fprintf(w, "  errors      %d\n", r.Errors)
	h := r.Latency
	fmt.Fprintf(w, "  latency     p50 %s  p99 %s  p999 %s  max %s  mean %s\n",
		fmtLatency(h.Quantile(0.50)), fmtLatency(h.Quantile(0.99)), fmtLatency(h.Quantile(0.999)),
		fmtLatency(h.Max()), fmtLatency(h.Mean()))
}

// fmtLatency prints d with three significant digits: 812ns, 1.25µs, 3.4ms, 2.01s.
func fmtLatency(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d)
	case d < time.Millisecond:
		return fmt.Sprintf("%.3gµs", float64(d)/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.3gms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.3gs", d.Seconds())
	}
}
