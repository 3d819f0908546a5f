package server

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// epochDay is a start time aligned to every unit up to a day (and to the week: 20000
// days is a multiple of 7 only by luck, so tests of weeks pick their own).
var epochDay = time.Unix(0, 0).UTC().Add(20000 * 24 * time.Hour)

// testServer is a Service behind a real gRPC server on an in-memory listener, with a
// client of go-control-plane's RLS types.
type testServer struct {
	svc    *Service
	client rlsv3.RateLimitServiceClient
	clock  *clockx.Fake
	dir    string // the config directory
	w      *Watcher
}

// writeFile writes a config file into dir.
func writeFile(tb testing.TB, dir, name, content string) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tb.Fatal(err)
	}
	return p
}

// startLocal serves yaml (as config.yaml in a fresh directory) on a local store whose
// fake clock starts at epochDay.
func startLocal(tb testing.TB, yaml string, o Options) *testServer {
	tb.Helper()
	clk := clockx.NewFake(epochDay)
	st, err := local.New(local.WithClock(clk))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	o.Clock = clk
	ts := startOn(tb, yaml, st, o)
	ts.clock = clk
	return ts
}

// startOn serves yaml on st.
func startOn(tb testing.TB, yaml string, st store.Store, o Options) *testServer {
	tb.Helper()
	cfg, dir := loadConfig(tb, yaml)
	svc, err := New(cfg, st, o)
	if err != nil {
		tb.Fatal(err)
	}
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	rlsv3.RegisterRateLimitServiceServer(gs, svc)
	go gs.Serve(lis)
	tb.Cleanup(gs.Stop)
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { conn.Close() })
	return &testServer{svc: svc, client: rlsv3.NewRateLimitServiceClient(conn), dir: dir, w: NewWatcher(dir, svc)}
}

// loadConfig loads yaml as config.yaml, the one file of a fresh directory, and returns
// the directory too.
func loadConfig(tb testing.TB, yaml string) (*Config, string) {
	tb.Helper()
	dir := tb.TempDir()
	writeFile(tb, dir, "config.yaml", yaml)
	cfg, err := Load(dir)
	if err != nil {
		tb.Fatal(err)
	}
	return cfg, dir
}

// desc builds a descriptor from key, value pairs.
func desc(kv ...string) *ratelimitv3.RateLimitDescriptor {
	d := &ratelimitv3.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &ratelimitv3.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// withHits sets a descriptor's own hits_addend.
func withHits(d *ratelimitv3.RateLimitDescriptor, n uint64) *ratelimitv3.RateLimitDescriptor {
	d.HitsAddend = wrapperspb.UInt64(n)
	return d
}

// call asks the server, failing the test on a gRPC error.
func (ts *testServer) call(tb testing.TB, domain string, hits uint32, descs ...*ratelimitv3.RateLimitDescriptor) *rlsv3.RateLimitResponse {
	tb.Helper()
	resp, err := ts.client.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: domain, Descriptors: descs, HitsAddend: hits})
	if err != nil {
		tb.Fatalf("ShouldRateLimit: %v", err)
	}
	return resp
}

const (
	ok   = rlsv3.RateLimitResponse_OK
	over = rlsv3.RateLimitResponse_OVER_LIMIT
)
