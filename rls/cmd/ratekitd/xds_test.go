package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"os"
	"testing"
	"time"

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
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
)

// Envoy Gateway configures the reference with environment variables only.
func TestXDSFlagsFromEnv(t *testing.T) {
	t.Setenv("CONFIG_TYPE", "GRPC_XDS_SOTW")
	t.Setenv("CONFIG_GRPC_XDS_SERVER_URL", "envoy-gateway:18001")
	t.Setenv("CONFIG_GRPC_XDS_NODE_ID", "envoy-ratelimit")
	t.Setenv("FORCE_START_WITHOUT_INITIAL_CONFIG", "true")
	t.Setenv("CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", "authorization:Bearer x")
	f, err := parseFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.True(t, f.xds.on())
	assert.Equal(t, "envoy-gateway:18001", f.xds.server)
	assert.Equal(t, "envoy-ratelimit", f.xds.nodeID)
	assert.True(t, f.xds.forceStart)
	o, err := f.xds.options(nil)
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"authorization": "Bearer x"}, o.Headers)
	assert.Nil(t, o.TLS)

	_, err = parseFlags([]string{"--config", "x.yaml"}, io.Discard)
	assert.ErrorContains(t, err, "--config is for --config-type FILE")
	_, err = parseFlags([]string{"--config-type", "FILE"}, io.Discard)
	assert.ErrorContains(t, err, "--config PATH is required")
	_, err = parseFlags([]string{"--config-type", "GRPC_XDS_DELTA"}, io.Discard)
	assert.ErrorContains(t, err, "want FILE or GRPC_XDS_SOTW")
	f, err = parseFlags([]string{"--xds-tls-ca", "/ca.pem"}, io.Discard)
	require.NoError(t, err)
	_, err = f.xds.options(nil)
	assert.ErrorContains(t, err, "need --xds-tls")
}

// startControlPlane runs go-control-plane's SotW server on a loopback port; acks receives
// the versions the client ACKs.
func startControlPlane(t *testing.T, opts ...grpc.ServerOption) (addr string, cache cachev3.SnapshotCache, acks chan string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cache = cachev3.NewSnapshotCache(true, cachev3.IDHash{}, nil)
	acks = make(chan string, 100)
	cb := serverv3.CallbackFuncs{StreamRequestFunc: func(_ int64, req *discoveryv3.DiscoveryRequest) error {
		if req.GetErrorDetail() == nil && req.GetResponseNonce() != "" {
			acks <- req.GetVersionInfo()
		}
		return nil
	}}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gs := grpc.NewServer(opts...)
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(gs, serverv3.NewServer(ctx, cache, cb))
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	return lis.Addr().String(), cache, acks
}

func pushEdge(t *testing.T, cache cachev3.SnapshotCache, version string, confs ...*rlconfv3.RateLimitConfig) {
	t.Helper()
	res := make([]types.Resource, len(confs))
	for i, c := range confs {
		res[i] = c
	}
	snap, err := cachev3.NewSnapshot(version, map[resource.Type][]types.Resource{resource.RateLimitConfigType: res})
	require.NoError(t, err)
	require.NoError(t, cache.SetSnapshot(context.Background(), "envoy-ratelimit", snap))
}

func waitAck(t *testing.T, acks chan string, version string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case v := <-acks:
			if v == version {
				return
			}
		case <-timeout:
			t.Fatalf("no ACK of version %s", version)
		}
	}
}

var edgeConf = &rlconfv3.RateLimitConfig{Name: "edge", Domain: "edge", Descriptors: []*rlconfv3.RateLimitDescriptor{{
	Key: "k", RateLimit: &rlconfv3.RateLimitPolicy{Unit: rlconfv3.RateLimitUnit_HOUR, RequestsPerUnit: 1},
}}}

// ratekitd waits for the server's first config, serves it, and drops a domain removed.
func TestXDSServesWhatTheServerPushes(t *testing.T) {
	t.Parallel()
	addr, cache, acks := startControlPlane(t)
	pushEdge(t, cache, "1", edgeConf)
	in := start(t, "--config-type", "GRPC_XDS_SOTW", "--xds-server", addr, "--xds-node-id", "envoy-ratelimit", "--force-start-without-initial-config=false")
	assert.Equal(t, rlsv3.RateLimitResponse_OK, in.ask(t, "k", "v"))
	assert.Equal(t, rlsv3.RateLimitResponse_OVER_LIMIT, in.ask(t, "k", "v"))
	pushEdge(t, cache, "2")
	waitAck(t, acks, "2")
	assert.Equal(t, rlsv3.RateLimitResponse_OK, in.ask(t, "k", "v"))
	assert.Contains(t, in.log.String(), "waiting for the first config from the xDS server")
}

// With --force-start-without-initial-config (Envoy Gateway sets it) ratekitd serves at
// once, answering UNAVAILABLE until the server sends its config (the reference answers
// an error then too).
func TestXDSForceStart(t *testing.T) {
	t.Parallel()
	addr, cache, acks := startControlPlane(t)
	in := start(t, "--config-type", "GRPC_XDS_SOTW", "--xds-server", addr, "--xds-node-id", "envoy-ratelimit", "--force-start-without-initial-config")
	_, err := in.client.ShouldRateLimit(context.Background(), request("k", "v"))
	assert.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	pushEdge(t, cache, "1", edgeConf)
	waitAck(t, acks, "1")
	assert.Equal(t, rlsv3.RateLimitResponse_OK, in.ask(t, "k", "v"))
	assert.Equal(t, rlsv3.RateLimitResponse_OVER_LIMIT, in.ask(t, "k", "v"))
}

// Envoy Gateway's xDS server asks for a client certificate; its own is checked against
// the CA file and, with --xds-tls-san, a name other than the address's.
func TestXDSOverMutualTLS(t *testing.T) {
	t.Parallel()
	p := newPKI(t, "envoy-gateway")
	pair, err := tls.LoadX509KeyPair(p.serverCert, p.serverKey)
	require.NoError(t, err)
	caPEM, err := os.ReadFile(p.caFile)
	require.NoError(t, err)
	clients := x509.NewCertPool()
	require.True(t, clients.AppendCertsFromPEM(caPEM))
	creds := credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: clients, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12})
	addr, cache, acks := startControlPlane(t, grpc.Creds(creds))
	pushEdge(t, cache, "1", edgeConf)
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	in := start(t, "--config-type", "GRPC_XDS_SOTW", "--xds-server", "localhost:"+port, "--xds-node-id", "envoy-ratelimit",
		"--xds-tls", "--xds-tls-cert", p.clientCert, "--xds-tls-key", p.clientKey, "--xds-tls-ca", p.caFile, "--xds-tls-san", "envoy-gateway",
		"--force-start-without-initial-config") // so that a failed handshake fails waitAck, in bounded time
	waitAck(t, acks, "1")
	assert.Equal(t, rlsv3.RateLimitResponse_OK, in.ask(t, "k", "v"))
	assert.Equal(t, rlsv3.RateLimitResponse_OVER_LIMIT, in.ask(t, "k", "v"))
}
