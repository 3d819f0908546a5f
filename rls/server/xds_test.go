package server

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	rlconfv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ratekit/limiter/algo"
)

// xdsServer is go-control-plane's SotW management server on an in-memory listener, with a
// snapshot cache for one node; requests receives every DiscoveryRequest the server gets,
// so a test sees the client's ACKs and NACKs.
type xdsServer struct {
	cache    cachev3.SnapshotCache
	node     string
	requests chan *discoveryv3.DiscoveryRequest
	headers  chan metadata.MD
	dial     grpc.DialOption
	lis      atomic.Pointer[bufconn.Listener] // where dial connects
	gs       *grpc.Server
}

func startXDSServer(t *testing.T, node string) *xdsServer {
	t.Helper()
	xs := &xdsServer{
		node:     node,
		requests: make(chan *discoveryv3.DiscoveryRequest, 100),
		headers:  make(chan metadata.MD, 10),
	}
	xs.dial = grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return xs.lis.Load().DialContext(ctx) })
	xs.restart(t)
	return xs
}

// restart replaces the server by a new one with an empty cache, as a management server
// that restarts, and closes the old one's streams.
func (xs *xdsServer) restart(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	xs.cache = cachev3.NewSnapshotCache(true, cachev3.IDHash{}, nil)
	cb := serverv3.CallbackFuncs{
		StreamOpenFunc: func(ctx context.Context, _ int64, _ string) error {
			md, _ := metadata.FromIncomingContext(ctx)
			xs.headers <- md
			return nil
		},
		StreamRequestFunc: func(_ int64, req *discoveryv3.DiscoveryRequest) error {
			xs.requests <- req
			return nil
		},
	}
	lis := bufconn.Listen(1 << 20)
	gs := grpc.NewServer()
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(gs, serverv3.NewServer(ctx, xs.cache, cb))
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	xs.lis.Store(lis)
	if xs.gs != nil {
		xs.gs.Stop()
	}
	xs.gs = gs
}

// push makes version the node's snapshot: these domains and nothing else.
func (xs *xdsServer) push(t *testing.T, version string, confs ...*rlconfv3.RateLimitConfig) {
	t.Helper()
	res := make([]types.Resource, len(confs))
	for i, c := range confs {
		res[i] = c
	}
	snap, err := cachev3.NewSnapshot(version, map[resource.Type][]types.Resource{resource.RateLimitConfigType: res})
	require.NoError(t, err)
	require.NoError(t, xs.cache.SetSnapshot(context.Background(), xs.node, snap))
}

// next returns the next request the server received; the wait is bounded so that a
// client that never answers fails the test rather than hanging it.
func (xs *xdsServer) next(t *testing.T) *discoveryv3.DiscoveryRequest {
	t.Helper()
	select {
	case req := <-xs.requests:
		return req
	case <-time.After(10 * time.Second):
		t.Fatal("the xDS client sent no request")
		return nil
	}
}

// acked waits for the client's ACK of version: a request carrying it and no error (a
// NACK of an earlier set may come first).
func (xs *xdsServer) acked(t *testing.T, version string) {
	t.Helper()
	for {
		req := xs.next(t)
		if req.GetErrorDetail() == nil && req.GetResponseNonce() != "" && req.GetVersionInfo() == version {
			return
		}
	}
}

// nacked waits for the client's NACK and returns its message; the request still carries
// the version last ACKed, keep.
func (xs *xdsServer) nacked(t *testing.T, keep string) string {
	t.Helper()
	for {
		req := xs.next(t)
		if req.GetErrorDetail() != nil {
			assert.Equal(t, keep, req.GetVersionInfo(), "a NACK carries the version still in use")
			return req.GetErrorDetail().GetMessage()
		}
	}
}

// domainConf is a RateLimitConfig resource named after its domain: key k with n
// requests per minute.
func domainConf(domain string, n uint32) *rlconfv3.RateLimitConfig {
	return &rlconfv3.RateLimitConfig{Name: domain, Domain: domain, Descriptors: []*rlconfv3.RateLimitDescriptor{{
		Key: "k", RateLimit: &rlconfv3.RateLimitPolicy{Unit: rlconfv3.RateLimitUnit_MINUTE, RequestsPerUnit: n},
	}}}
}

// startXDSClient runs an XDS source for ts's Service against xs until the test ends.
func startXDSClient(t *testing.T, ts *testServer, xs *xdsServer, o XDSOptions) *XDS {
	t.Helper()
	o.Server, o.NodeID = "passthrough:///xds", xs.node
	o.DialOptions = append(o.DialOptions, xs.dial)
	x, err := NewXDS(ts.svc, o)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- x.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		require.NoError(t, <-done)
	})
	return x
}

// limitOf asks for key k=v in domain and returns the overall code and the limit the
// answer names (0: none).
func limitOf(t *testing.T, ts *testServer, domain string) (code string, perUnit uint32) {
	t.Helper()
	r := ts.call(t, domain, 0, desc("k", "v"))
	return r.GetOverallCode().String(), r.GetStatuses()[0].GetCurrentLimit().GetRequestsPerUnit()
}

func TestXDSPushChangeRemoveAndNack(t *testing.T) {
	t.Parallel()
	ts := startLocal(t, "domain: files\ndescriptors:\n  - key: k\n    rate_limit: {unit: minute, requests_per_unit: 1}\n", Options{})
	ts.alignTo(time.Minute) // the fake clock stays in this window
	xs := startXDSServer(t, "envoy-ratelimit")
	xs.push(t, "1", domainConf("a", 2))
	x := startXDSClient(t, ts, xs, XDSOptions{Headers: map[string]string{"authorization": "Bearer t"}, RetryMin: 10 * time.Millisecond})
	xs.acked(t, "1")
	<-x.Ready()
	assert.Equal(t, []string{"Bearer t"}, (<-xs.headers).Get("authorization"))

	// Pushed: a's limit applies, and the domain from files is gone (an update is the
	// whole set).
	for i, want := range []string{"OK", "OK", "OVER_LIMIT"} {
		code, n := limitOf(t, ts, "a")
		assert.Equal(t, want, code, "call %d", i+1)
		assert.EqualValues(t, 2, n)
	}
	code, n := limitOf(t, ts, "files")
	assert.Equal(t, "OK", code)
	assert.Zero(t, n, "the file's domain outlived the first xDS update")

	// Changed: a's new limit, in the next window.
	xs.push(t, "2", domainConf("a", 5))
	xs.acked(t, "2")
	ts.clock.Add(time.Minute)
	for i, want := range []string{"OK", "OK", "OK", "OK", "OK", "OVER_LIMIT"} {
		code, n := limitOf(t, ts, "a")
		assert.Equal(t, want, code, "call %d after the change", i+1)
		assert.EqualValues(t, 5, n)
	}

	// Removed: a goes away, b comes.
	xs.push(t, "3", domainConf("b", 1))
	xs.acked(t, "3")
	code, n = limitOf(t, ts, "a")
	assert.Equal(t, "OK", code)
	assert.Zero(t, n, "a removed domain still limits")
	code, n = limitOf(t, ts, "b")
	assert.Equal(t, "OK", code)
	assert.EqualValues(t, 1, n)

	// Bad: a rule without a unit (UNKNOWN) beside a good domain. The whole update is
	// NACKed with the loader's error and version 3 keeps running.
	bad := domainConf("c", 1)
	bad.Descriptors[0].RateLimit.Unit = rlconfv3.RateLimitUnit_UNKNOWN
	xs.push(t, "4", domainConf("b", 100), bad)
	msg := xs.nacked(t, "3")
	assert.Contains(t, msg, "xds:c:5: descriptors[0].rate_limit.unit: missing")
	// The snapshot cache answers the NACK with the same set at once: it is NACKed again,
	// after a wait, without being loaded, logged or counted again.
	assert.Equal(t, msg, xs.nacked(t, "3"))
	code, n = limitOf(t, ts, "b")
	assert.Equal(t, "OVER_LIMIT", code, "b's limit of 1 no longer applies after a NACK")
	assert.EqualValues(t, 1, n)
	assert.EqualValues(t, 3, ts.svc.metrics.reloadsOK.Load())
	assert.EqualValues(t, 1, ts.svc.metrics.reloadsKO.Load())

	// Fixed, then emptied: no resource at all is no domain at all.
	xs.push(t, "5", domainConf("b", 100))
	xs.acked(t, "5")
	_, n = limitOf(t, ts, "b")
	assert.EqualValues(t, 100, n)
	xs.push(t, "6")
	xs.acked(t, "6")
	_, n = limitOf(t, ts, "b")
	assert.Zero(t, n, "an empty update left a domain")
}

// The first request names the node and asks for RateLimitConfig, as the reference's.
func TestXDSSubscribesAsTheReference(t *testing.T) {
	t.Parallel()
	ts := startLocal(t, "domain: files\n", Options{})
	xs := startXDSServer(t, "node-1")
	startXDSClient(t, ts, xs, XDSOptions{NodeMetadata: map[string]string{"zone": "z1"}})
	req := xs.next(t)
	assert.Equal(t, "type.googleapis.com/ratelimit.config.ratelimit.v3.RateLimitConfig", req.GetTypeUrl())
	assert.Equal(t, "node-1", req.GetNode().GetId())
	assert.Equal(t, "z1", req.GetNode().GetMetadata().GetFields()["zone"].GetStringValue())
	assert.Empty(t, req.GetResourceNames(), "a SotW wildcard subscription names no resource")
}

// ConfigFromXDS turns every field of the proto into the rule the same YAML gives.
func TestXDSConfigFromProto(t *testing.T) {
	t.Parallel()
	md, err := structpb.NewStruct(map[string]any{"team": "x", "n": 2})
	require.NoError(t, err)
	cfg, err := ConfigFromXDS([]*rlconfv3.RateLimitConfig{{
		Name: "res", Domain: "d",
		Descriptors: []*rlconfv3.RateLimitDescriptor{
			{Key: "k", Value: "v", ShadowMode: true, QuotaMode: true, DetailedMetric: true, Metadata: md,
				RateLimit: &rlconfv3.RateLimitPolicy{Unit: rlconfv3.RateLimitUnit_WEEK, RequestsPerUnit: 7, Name: "r1",
					Replaces: []*rlconfv3.RateLimitReplace{{Name: "r2"}}}},
			{Key: "u", RateLimit: &rlconfv3.RateLimitPolicy{Unlimited: true}},
			{Key: "w", Value: "a*b", Descriptors: []*rlconfv3.RateLimitDescriptor{
				{Key: "n", RateLimit: &rlconfv3.RateLimitPolicy{Unit: rlconfv3.RateLimitUnit_SECOND, RequestsPerUnit: 3}},
			}},
		},
	}})
	require.NoError(t, err)
	assert.Equal(t, []string{"xds:res"}, cfg.Files())
	d := cfg.domains["d"]
	require.NotNil(t, d)

	r, _, _ := d.match([]entry{{"k", "v"}})
	require.NotNil(t, r)
	assert.Equal(t, 7*24*time.Hour, r.Window())
	assert.EqualValues(t, 7, r.rate.count)
	assert.True(t, r.Shadow)
	assert.True(t, r.Quota)
	assert.True(t, r.Detailed)
	assert.Equal(t, "r1", r.Name)
	assert.Equal(t, []string{"r2"}, r.Replaces)
	assert.Equal(t, map[string]any{"team": "x", "n": float64(2)}, r.Metadata.AsMap())

	r, _, _ = d.match([]entry{{"u", "anything"}})
	require.NotNil(t, r)
	assert.True(t, r.Unlimited)

	r, _, _ = d.match([]entry{{"w", "aXXb"}, {"n", "1"}})
	require.NotNil(t, r)
	assert.Equal(t, time.Second, r.Window())
	assert.EqualValues(t, 3, r.rate.count)

	empty, err := ConfigFromXDS(nil)
	require.NoError(t, err)
	assert.Empty(t, empty.Domains())
}

// The loader refuses in a resource what it refuses in a file, naming the resource.
func TestXDSConfigRefusals(t *testing.T) {
	t.Parallel()
	unit := func(u rlconfv3.RateLimitUnit, unlimited bool) *rlconfv3.RateLimitConfig {
		return &rlconfv3.RateLimitConfig{Name: "r", Domain: "d", Descriptors: []*rlconfv3.RateLimitDescriptor{{
			Key: "k", RateLimit: &rlconfv3.RateLimitPolicy{Unit: u, RequestsPerUnit: 1, Unlimited: unlimited},
		}}}
	}
	selfReplace := unit(rlconfv3.RateLimitUnit_SECOND, false)
	selfReplace.Descriptors[0].RateLimit.Name = "me"
	selfReplace.Descriptors[0].RateLimit.Replaces = []*rlconfv3.RateLimitReplace{{Name: "me"}}
	dupDesc := unit(rlconfv3.RateLimitUnit_SECOND, false)
	dupDesc.Descriptors = append(dupDesc.Descriptors, dupDesc.Descriptors[0])
	for name, tc := range map[string]struct {
		confs []*rlconfv3.RateLimitConfig
		want  string
	}{
		"no unit":                 {[]*rlconfv3.RateLimitConfig{unit(rlconfv3.RateLimitUnit_UNKNOWN, false)}, "xds:r:5: descriptors[0].rate_limit.unit: missing"},
		"unit with unlimited":     {[]*rlconfv3.RateLimitConfig{unit(rlconfv3.RateLimitUnit_HOUR, true)}, "rate_limit.unit: not allowed with unlimited: true"},
		"a unit number not named": {[]*rlconfv3.RateLimitConfig{unit(rlconfv3.RateLimitUnit(42), false)}, `"42" is not one of`},
		"empty domain":            {[]*rlconfv3.RateLimitConfig{{Name: "r"}}, "xds:r:1: domain: missing or empty"},
		"empty key":               {[]*rlconfv3.RateLimitConfig{{Domain: "d", Descriptors: []*rlconfv3.RateLimitDescriptor{{}}}}, "xds:[0]"},
		"replaces itself":         {[]*rlconfv3.RateLimitConfig{selfReplace}, "replaces its own rule"},
		"duplicate descriptor":    {[]*rlconfv3.RateLimitConfig{dupDesc}, "duplicate descriptor k"},
		"domain twice":            {[]*rlconfv3.RateLimitConfig{domainConf("d", 1), {Name: "other", Domain: "d"}}, `domain "d" is also defined in xds:d`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ConfigFromXDS(tc.confs)
			require.Error(t, err)
			assert.True(t, errors.Is(err, algo.ErrInvalidConfig))
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestXDSParsePairs(t *testing.T) {
	t.Parallel()
	m, err := ParseXDSPairs("a:1, b:x:y", ":")
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"a": "1", "b": "x:y"}, m)
	m, err = ParseXDSPairs("", "=")
	require.NoError(t, err)
	assert.Nil(t, m)
	_, err = ParseXDSPairs("novalue", "=")
	assert.Error(t, err)
}

// A stream that ends is opened again: the running config stays meanwhile, and the new
// server's set replaces it.
func TestXDSReconnects(t *testing.T) {
	t.Parallel()
	ts := startLocal(t, "domain: files\n", Options{})
	xs := startXDSServer(t, "n")
	xs.push(t, "1", domainConf("a", 1))
	startXDSClient(t, ts, xs, XDSOptions{RetryMin: 10 * time.Millisecond})
	xs.acked(t, "1")

	xs.restart(t)
	_, n := limitOf(t, ts, "a")
	assert.EqualValues(t, 1, n, "the config was dropped with the stream")
	xs.push(t, "7", domainConf("b", 2))
	xs.acked(t, "7")
	_, n = limitOf(t, ts, "a")
	assert.Zero(t, n)
	_, n = limitOf(t, ts, "b")
	assert.EqualValues(t, 2, n)
}

// Until the first set arrives a Service started on PendingConfig answers UNAVAILABLE, as
// the reference answers an error before its first config.
func TestXDSPendingUntilTheFirstSet(t *testing.T) {
	t.Parallel()
	ts := startLocal(t, "domain: files\n", Options{})
	ts.svc.SetConfig(PendingConfig())
	_, err := ts.client.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "a", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("k", "v")}})
	assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)

	xs := startXDSServer(t, "n")
	x := startXDSClient(t, ts, xs, XDSOptions{})
	xs.push(t, "1", domainConf("a", 1))
	xs.acked(t, "1")
	<-x.Ready()
	code, n := limitOf(t, ts, "a")
	assert.Equal(t, "OK", code)
	assert.EqualValues(t, 1, n)
}
