package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ratekit/limiter/internal/redistest"
)

// syncBuffer is a log sink the server goroutine writes while the test reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// instance is one ratekitd run in this process, on loopback ports of its own.
type instance struct {
	grpcAddr, httpAddr string
	client             rlsv3.RateLimitServiceClient
	stop               context.CancelFunc
	done               chan error
	log                *syncBuffer
}

func start(tb testing.TB, args ...string) *instance {
	tb.Helper()
	return startWith(tb, hooks{}, args...)
}

func startWith(tb testing.TB, h hooks, args ...string) *instance {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	in := &instance{stop: cancel, done: make(chan error, 1), log: &syncBuffer{}}
	ready := make(chan struct{})
	args = append([]string{"--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--reload-interval", "0"}, args...)
	go func() {
		h.ready = func(g, hh string) { in.grpcAddr, in.httpAddr = g, hh; close(ready) }
		in.done <- run(ctx, args, in.log, h)
	}()
	select {
	case <-ready:
	case err := <-in.done:
		tb.Fatalf("ratekitd exited: %v\n%s", err, in.log)
	}
	conn, err := grpc.NewClient(in.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	in.client = rlsv3.NewRateLimitServiceClient(conn)
	tb.Cleanup(func() { in.stop(); <-in.done })
	return in
}

func (in *instance) ask(tb testing.TB, kv ...string) rlsv3.RateLimitResponse_Code {
	tb.Helper()
	return askClient(tb, in.client, kv...)
}

// askClient sends one descriptor of key/value pairs in the examples' domain, like Envoy.
func askClient(tb testing.TB, c rlsv3.RateLimitServiceClient, kv ...string) rlsv3.RateLimitResponse_Code {
	tb.Helper()
	r, err := c.ShouldRateLimit(context.Background(), request(kv...))
	if err != nil {
		tb.Fatal(err)
	}
	return r.OverallCode
}

func request(kv ...string) *rlsv3.RateLimitRequest {
	d := &ratelimitv3.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &ratelimitv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return &rlsv3.RateLimitRequest{Domain: "edge", Descriptors: []*ratelimitv3.RateLimitDescriptor{d}}
}

func TestServesTheExamplesAndDrains(t *testing.T) {
	t.Parallel()
	in := start(t, "--config", "../../examples")
	if got := in.ask(t, "remote_address", "50.0.0.5"); got != rlsv3.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("blocked address: %v", got)
	}
	resp, err := http.Get("http://" + in.httpAddr + "/healthcheck")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("healthcheck: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = http.Post("http://"+in.httpAddr+"/json", "application/json",
		strings.NewReader(`{"domain":"edge","descriptors":[{"entries":[{"key":"source_cluster","value":"internal"}]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"limitRemaining":4294967295`) {
		t.Fatalf("/json: %d %s", resp.StatusCode, body)
	}
	in.stop()
	if err := <-in.done; err != nil {
		t.Fatalf("run after SIGTERM: %v", err)
	}
	in.done <- nil // for the cleanup
	for _, want := range []string{"ratekitd serving", "draining", "stopped"} {
		if !strings.Contains(in.log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, in.log)
		}
	}
}

// TestTwoRatekitdOnOneRedis runs the command twice on one Redis, each with its own client:
// the examples' limit of 5 marketing messages a day per number is enforced by both
// together.
func TestTwoRatekitdOnOneRedis(t *testing.T) {
	t.Parallel()
	addr := redistest.Start(t).Addr()
	a := start(t, "--config", "../../examples", "--redis", "redis://"+addr)
	b := start(t, "--config", "../../examples", "--redis", "redis://"+addr, "--denial-cache")
	// The hits alternate between the instances; the rule is a sliding log, which has no
	// window boundary that a slow run could cross.
	oks := 0
	for i := range 12 {
		in := a
		if i%2 == 1 {
			in = b
		}
		if in.ask(t, "message_type", "marketing", "to_number", "206") == rlsv3.RateLimitResponse_OK {
			oks++
		}
	}
	if oks != 5 {
		t.Fatalf("two instances allowed %d marketing messages, want 5 together", oks)
	}
}

func TestFlagErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--config PATH is required"},
		{[]string{"--config", "x", "extra"}, "unexpected arguments"},
		{[]string{"--config", "../../examples", "--log-format", "xml"}, "--log-format"},
		{[]string{"--config", "../../examples", "--failure-policy", "maybe", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, "unknown failure policy"},
		{[]string{"--config", "../../examples", "--redis", "memcached://x"}, "unknown scheme"},
		{[]string{"--config", "/nonexistent"}, "invalid config"},
	} {
		err := run(context.Background(), tc.args, io.Discard, hooks{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want %q", tc.args, err, tc.want)
		}
	}
}

func TestRedisURLs(t *testing.T) {
	t.Parallel()
	for spec, want := range map[string]string{
		"redis://localhost:6379/2":                 "redis://localhost:6379",
		"redis+cluster://u:p@n1:7000,n2:7001":      "redis+cluster://n1:7000,n2:7001",
		"rediss+cluster://n1:7000?dial_timeout=1s": "rediss+cluster://n1:7000",
	} {
		c, desc, err := redisClient(storeFlags{redis: spec})
		if err != nil || desc != want {
			t.Errorf("%s: %q, %v; want %q", spec, desc, err, want)
			continue
		}
		c.Close()
	}
	for _, spec := range []string{"localhost", "redis+cluster://", "redis+cluster://n1:7000/1", "http://x"} {
		if _, _, err := redisClient(storeFlags{redis: spec}); err == nil {
			t.Errorf("%s accepted", spec)
		}
	}
}

// TestTwoRatekitdOnOneRedisCluster is the same on a 3-node Redis Cluster, reached with a
// redis+cluster:// URL naming one node (the others are discovered).
func TestTwoRatekitdOnOneRedisCluster(t *testing.T) {
	t.Parallel()
	nodes := redistest.StartCluster(t, 3).Addrs()
	a := start(t, "--config", "../../examples", "--redis", "redis+cluster://"+nodes[0])
	b := start(t, "--config", "../../examples", "--redis", "redis+cluster://"+strings.Join(nodes[1:], ","))
	oks := 0
	for i := range 12 {
		in := a
		if i%2 == 1 {
			in = b
		}
		for _, number := range []string{"206", "207", "208"} { // keys on several slots
			if in.ask(t, "message_type", "marketing", "to_number", number) == rlsv3.RateLimitResponse_OK {
				oks++
			}
		}
	}
	if oks != 15 {
		t.Fatalf("two instances on a cluster allowed %d marketing messages to 3 numbers, want 5 each", oks)
	}
}

// envoyproxy/ratelimit cannot start without Redis, nor can ratekitd under the default
// --failure-policy error, which has no answer of its own; under open, closed or local it
// starts, answers by its policy and logs the outage.
func TestStartsWithoutRedisWhenThePolicyCanAnswer(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "redis://" + l.Addr().String()
	l.Close()
	err = run(context.Background(), []string{"--config", "../../examples", "--redis", dead, "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, io.Discard, hooks{})
	if err == nil || !strings.Contains(err.Error(), "starts without it") {
		t.Fatalf("default policy without Redis: %v, want a refusal naming the policies that start", err)
	}
	in := start(t, "--config", "../../examples", "--redis", dead, "--failure-policy", "open", "--redis-timeout", "50ms")
	if got := in.ask(t, "remote_address", "10.0.0.1"); got != rlsv3.RateLimitResponse_OK {
		t.Fatalf("open policy without Redis: %v, want OK", got)
	}
	if !strings.Contains(in.log.String(), "store outage at start") {
		t.Fatalf("log lacks the outage at start:\n%s", in.log)
	}
}

// Bounds against hostile clients by default: every HTTP timeout set, the in-memory store
// bounded, and caps on a request's descriptors and entries.
func TestBoundsByDefault(t *testing.T) {
	t.Parallel()
	s := httpServer(http.NotFoundHandler())
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.IdleTimeout <= 0 {
		t.Fatalf("HTTP server timeouts: header %v, read %v, idle %v; want all set", s.ReadHeaderTimeout, s.ReadTimeout, s.IdleTimeout)
	}
	f, err := parseFlags([]string{"--config", "x"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if f.store.localMaxKeys <= 0 || f.maxDescriptors <= 0 || f.maxEntries <= 0 {
		t.Fatalf("defaults: memory keys %d, descriptors %d, entries %d; want each bounded", f.store.localMaxKeys, f.maxDescriptors, f.maxEntries)
	}
	if f.policy != "error" {
		t.Fatalf("default failure policy %q, want error (envoyproxy/ratelimit's)", f.policy)
	}
}
