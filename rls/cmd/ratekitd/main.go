package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/rls/server"
	"github.com/ratekit/limiter/store"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr, hooks{}); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "ratekitd:", err)
		os.Exit(1)
	}
}

// flags are ratekitd's command line.
type flags struct {
	config         string
	grpcAddr       string
	httpAddr       string
	policy         string
	breaker        limiter.CircuitBreaker
	callTimeout    time.Duration
	shadow         bool
	quotaMode      bool
	spendNothing   bool
	headers        bool
	limitHeaders   bool
	limitNames     server.ReferenceHeaderNames
	dynamicMeta    bool
	maxDescriptors int
	maxEntries     int
	reloadInterval time.Duration
	drainTimeout   time.Duration
	logFormat      string
	logLevel       string
	store          storeFlags
	listenersTLS   listenersTLS
	xds            xdsFlags
}

func parseFlags(args []string, out io.Writer) (*flags, error) {
	var f flags
	envBools, err := envBools(append([]string{"REDIS_TLS", "REDIS_TLS_SKIP_HOSTNAME_VERIFICATION"}, envListenerBools...)...)
	if err != nil {
		return nil, err
	}
	fs := flag.NewFlagSet("ratekitd", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.StringVar(&f.config, "config", "", "a YAML file, or a directory of *.yaml files, in envoyproxy/ratelimit's format (required with --config-type FILE)")
	if err := f.xds.register(fs); err != nil {
		return nil, err
	}
	fs.StringVar(&f.grpcAddr, "grpc-addr", ":8081", "address of the gRPC RateLimitService")
	fs.StringVar(&f.httpAddr, "http-addr", ":8080", "address of /json, /healthcheck and /metrics")
	fs.StringVar(&f.policy, "failure-policy", "error", "when the store cannot decide: error (gRPC UNAVAILABLE: Envoy's failure_mode_deny decides, as with envoyproxy/ratelimit), closed (OVER_LIMIT), open (OK) or local (decide in this process's memory)")
	fs.Float64Var(&f.breaker.FailureRate, "breaker-failure-rate", 0, "share of a window's calls that must fail to open the circuit breaker (0: the library's 0.5)")
	fs.IntVar(&f.breaker.MinCalls, "breaker-min-calls", 0, "calls a window needs before its failure rate is judged (0: the library's 20)")
	fs.DurationVar(&f.breaker.Window, "breaker-window", 0, "the breaker's window (0: the library's 1s)")
	fs.DurationVar(&f.breaker.CoolDown, "breaker-cooldown", 0, "how long the breaker stays open before a probe (0: the library's 1s)")
	fs.BoolVar(&f.breaker.Off, "no-breaker", false, "no circuit breaker: every call goes to the store")
	fs.DurationVar(&f.callTimeout, "timeout", 0, "bound on each decision's store call (0: the store's own, --redis-timeout)")
	fs.BoolVar(&f.shadow, "shadow", false, "global shadow mode (SHADOW_MODE): decide and count everything; statuses keep their code, the overall code is OK")
	fs.BoolVar(&f.quotaMode, "quota-mode", false, "global quota mode (QUOTA_MODE): OVER_LIMIT only when every descriptor is over its limit")
	fs.BoolVar(&f.spendNothing, "denials-spend-nothing", false, "a denied request spends nothing (the library's reading); by default its hits are counted, as envoyproxy/ratelimit counts them")
	fs.BoolVar(&f.headers, "headers", false, "add IETF RateLimit-Policy / RateLimit (and Retry-After) to response_headers_to_add")
	fs.BoolVar(&f.limitHeaders, "limit-headers", false, "add envoyproxy/ratelimit's limit, remaining and reset headers (LIMIT_RESPONSE_HEADERS_ENABLED)")
	fs.StringVar(&f.limitNames.Limit, "limit-limit-header", "RateLimit-Limit", "name of --limit-headers' limit header (LIMIT_LIMIT_HEADER), e.g. X-RateLimit-Limit")
	fs.StringVar(&f.limitNames.Remaining, "limit-remaining-header", "RateLimit-Remaining", "name of --limit-headers' remaining header (LIMIT_REMAINING_HEADER)")
	fs.StringVar(&f.limitNames.Reset, "limit-reset-header", "RateLimit-Reset", "name of --limit-headers' reset header (LIMIT_RESET_HEADER)")
	fs.BoolVar(&f.dynamicMeta, "dynamic-metadata", false, "send back dynamic_metadata: domain, descriptors and the passing rules' metadata (RESPONSE_DYNAMIC_METADATA)")
	fs.IntVar(&f.maxDescriptors, "max-descriptors", server.DefaultMaxDescriptors, "most descriptors in one request (more: INVALID_ARGUMENT)")
	fs.IntVar(&f.maxEntries, "max-entries", server.DefaultMaxEntries, "most entries in one descriptor (more: INVALID_ARGUMENT)")
	fs.DurationVar(&f.reloadInterval, "reload-interval", 2*time.Second, "how often to look for changed config files (0: never)")
	fs.DurationVar(&f.drainTimeout, "drain-timeout", 10*time.Second, "on SIGTERM, how long calls in flight may take to finish")
	fs.StringVar(&f.logFormat, "log-format", "text", "text or json")
	fs.StringVar(&f.logLevel, "log-level", "info", "debug, info, warn or error")
	fs.StringVar(&f.store.redis, "redis", os.Getenv("REDIS_URL"), "Redis URL: redis://[user:password@]host:port[/db] (rediss:// for TLS), redis+cluster://host:port[,host:port...], redis+sentinel://sentinel:port[,sentinel:port...]/master[/db], or REDIS_URL's form (see --redis-type); empty: in memory (default $REDIS_URL)")
	fs.StringVar(&f.store.redisType, "redis-type", os.Getenv("REDIS_TYPE"), "how to read a --redis that is not a URL, as envoyproxy/ratelimit reads REDIS_URL: single (host:port), cluster (host:port,host:port...) or sentinel (master,sentinel:port[,...]) (default $REDIS_TYPE)")
	fs.StringVar(&f.store.auth, "redis-auth", os.Getenv("REDIS_AUTH"), "password or user:password of the Redis nodes, if not in the URL (default $REDIS_AUTH)")
	fs.StringVar(&f.store.sentinelAuth, "redis-sentinel-auth", os.Getenv("REDIS_SENTINEL_AUTH"), "password or user:password of the sentinels (default $REDIS_SENTINEL_AUTH)")
	fs.BoolVar(&f.store.tls.on, "redis-tls", envBools["REDIS_TLS"], "TLS to Redis (and the sentinels) whatever the URL's scheme (default $REDIS_TLS)")
	fs.StringVar(&f.store.tls.cert, "redis-tls-cert", os.Getenv("REDIS_TLS_CLIENT_CERT"), "PEM file of the client certificate Redis asks for (mTLS), with --redis-tls-key (default $REDIS_TLS_CLIENT_CERT)")
	fs.StringVar(&f.store.tls.key, "redis-tls-key", os.Getenv("REDIS_TLS_CLIENT_KEY"), "PEM file of the client certificate's key (default $REDIS_TLS_CLIENT_KEY)")
	fs.StringVar(&f.store.tls.ca, "redis-tls-ca", os.Getenv("REDIS_TLS_CACERT"), "PEM file of CAs to trust for Redis's certificate, beside the system's (default $REDIS_TLS_CACERT)")
	fs.BoolVar(&f.store.tls.skipHostname, "redis-tls-skip-hostname-verification", envBools["REDIS_TLS_SKIP_HOSTNAME_VERIFICATION"], "check Redis's certificate chain but not its name (default $REDIS_TLS_SKIP_HOSTNAME_VERIFICATION)")
	fs.StringVar(&f.store.prefix, "redis-prefix", "ratekitd:", "prefix of every Redis key")
	fs.DurationVar(&f.store.timeout, "redis-timeout", 200*time.Millisecond, "bound on each Redis call")
	fs.BoolVar(&f.store.batching, "redis-batching", true, "share pipelines between concurrent calls (distributed.WithBatching; false: a round trip per call)")
	fs.BoolVar(&f.store.denialCache, "denial-cache", false, "answer a key Redis just denied locally until its RetryAfter (distributed.WithDenialCache)")
	fs.IntVar(&f.store.denialEntries, "denial-cache-entries", 10_000, "keys the denial cache remembers")
	fs.DurationVar(&f.store.denialMaxAge, "denial-cache-max-age", 0, "longest reuse of one denial (0: until its RetryAfter)")
	fs.Int64Var(&f.store.lease, "lease", 0, "serve hot keys from local slices of this many permits (package leasing; 0: off)")
	fs.DurationVar(&f.store.leaseTTL, "lease-ttl", 100*time.Millisecond, "how long a lease lives (leasing.WithTTL)")
	fs.IntVar(&f.store.localMaxKeys, "memory-max-keys", defaultMemoryMaxKeys, "bound on the keys of the in-memory store and of --failure-policy local's (0: none)")
	f.listenersTLS.register(fs, envBools)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := f.xds.check(f.config); err != nil {
		return nil, err
	}
	return &f, nil
}

// envBools reads envoyproxy/ratelimit's boolean environment variables, the defaults of
// the flags that replace them: unset or empty is false, and a value strconv.ParseBool
// does not read is an error rather than false.
func envBools(names ...string) (map[string]bool, error) {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		v := os.Getenv(n)
		if v == "" {
			continue
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("$%s=%q: want true or false", n, v)
		}
		m[n] = b
	}
	return m, nil
}

func newLogger(f *flags, out io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	o := &slog.HandlerOptions{Level: level}
	switch f.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(out, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(out, o)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", f.logFormat)
}

// defaultMemoryMaxKeys bounds the in-memory store by default: distinct descriptor values
// come from clients, so without a bound a flood of them grows the process without end.
// Past it, new keys share an overflow state (local.WithMaxKeys), which only decides more
// strictly.
const defaultMemoryMaxKeys = 500_000

// hooks let tests watch and wrap what run does; the zero value does nothing.
type hooks struct {
	ready     func(grpcAddr, httpAddr string) // both listeners serve
	draining  func()                          // the drain has begun: health checks fail
	wrapStore func(store.Store) store.Store
	tlsClock  clockx.Clock // when the listeners' TLS files are looked at; nil: the system's
}

// httpServer is the HTTP listener's server, bounded against slow or idle clients: the
// headers within ReadHeaderTimeout, the whole request (a /json body is at most 1 MiB)
// within ReadTimeout, an idle keep-alive connection closed after IdleTimeout.
func httpServer(h http.Handler) *http.Server {
	return &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
}

// run serves until ctx ends, then drains.
func run(ctx context.Context, args []string, logOut io.Writer, h hooks) error {
	f, err := parseFlags(args, logOut)
	if err != nil {
		return err
	}
	log, err := newLogger(f, logOut)
	if err != nil {
		return err
	}
	cfg := server.PendingConfig() // with --config-type GRPC_XDS_SOTW: UNAVAILABLE until the server's
	if !f.xds.on() {
		if cfg, err = server.Load(f.config); err != nil {
			return err
		}
		server.LogIgnored(log, cfg)
	}
	grpcTLS, httpTLS, err := f.listenersTLS.configs(log, h.tlsClock)
	if err != nil {
		return err
	}
	// A store that cannot be reached at start is an error only when no answer can be
	// given without it (--failure-policy error); otherwise ratekitd serves by its
	// failure policy until the store answers.
	st, desc, err := openStore(ctx, f.store, f.policy != string(server.PolicyError), log)
	if err != nil {
		return err
	}
	defer st.Close()
	if h.wrapStore != nil {
		st = h.wrapStore(st)
	}
	opts := server.Options{
		FailurePolicy:        server.Policy(f.policy),
		Breaker:              f.breaker,
		Timeout:              f.callTimeout,
		Shadow:               f.shadow,
		QuotaMode:            f.quotaMode,
		DenialsSpendNothing:  f.spendNothing,
		Headers:              f.headers,
		ReferenceHeaders:     f.limitHeaders,
		ReferenceHeaderNames: f.limitNames,
		DynamicMetadata:      f.dynamicMeta,
		MaxDescriptors:       f.maxDescriptors,
		MaxEntries:           f.maxEntries,
		Concurrent:           f.store.redis != "",
		Logger:               log,
	}
	if opts.FailurePolicy == server.PolicyLocal {
		fb, err := local.New(local.WithMaxKeys(f.store.localMaxKeys))
		if err != nil {
			return err
		}
		defer fb.Close()
		opts.FallbackStore = fb
	}
	svc, err := server.New(cfg, st, opts)
	if err != nil {
		return err
	}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if f.xds.on() {
		if serve, err := startXDS(wctx, &f.xds, svc, log); !serve {
			return err
		}
	}
	gl, err := net.Listen("tcp", f.grpcAddr)
	if err != nil {
		return err
	}
	hl, err := net.Listen("tcp", f.httpAddr)
	if err != nil {
		gl.Close()
		return err
	}
	var grpcOpts []grpc.ServerOption
	if grpcTLS != nil {
		grpcOpts = append(grpcOpts, grpc.Creds(credentials.NewTLS(grpcTLS)))
	}
	gs := grpc.NewServer(grpcOpts...)
	rlsv3.RegisterRateLimitServiceServer(gs, svc)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(gs, hs)
	web := server.NewHTTP(svc)
	httpSrv := httpServer(web.Handler())
	httpSrv.TLSConfig = httpTLS

	errc := make(chan error, 2)
	go func() { errc <- gs.Serve(gl) }()
	go func() {
		if httpTLS != nil {
			errc <- httpSrv.ServeTLS(hl, "", "") // the files are httpTLS's
			return
		}
		errc <- httpSrv.Serve(hl)
	}()
	if f.reloadInterval > 0 && !f.xds.on() {
		go server.NewWatcher(f.config, svc).Run(wctx, f.reloadInterval)
	}
	log.Info("ratekitd serving", slog.String("grpc", gl.Addr().String()), slog.String("http", hl.Addr().String()),
		slog.Bool("grpc_tls", grpcTLS != nil), slog.Bool("http_tls", httpTLS != nil), slog.String("store", desc),
		slog.String("failure_policy", f.policy), slog.String("config", f.config),
		slog.String("domains", strings.Join(svc.Config().Domains(), ",")))
	if h.ready != nil {
		h.ready(gl.Addr().String(), hl.Addr().String())
	}

	select {
	case <-ctx.Done():
	case err := <-errc:
		gs.Stop()
		httpSrv.Close()
		return err
	}
	// Drain: health checks fail first so balancers move away, then the gRPC calls in
	// flight finish (GracefulStop waits for them) while /healthcheck keeps answering 500,
	// then the HTTP server drains; all within --drain-timeout.
	log.Info("draining", slog.Duration("timeout", f.drainTimeout))
	web.Drain()
	hs.Shutdown()
	if h.draining != nil {
		h.draining()
	}
	dctx, cancel := context.WithTimeout(context.Background(), f.drainTimeout)
	defer cancel()
	done := make(chan struct{})
	go func() { gs.GracefulStop(); close(done) }()
	select {
	case <-done:
	case <-dctx.Done():
		log.Warn("drain timeout: cancelling the calls still in flight")
		gs.Stop()
		<-done
	}
	httpErr := httpSrv.Shutdown(dctx)
	log.Info("stopped")
	if httpErr != nil && !errors.Is(httpErr, context.DeadlineExceeded) {
		return httpErr
	}
	return nil
}
