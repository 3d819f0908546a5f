package main

import (
	"context"
	"io"
	"net"
	"os/exec"
	"strconv"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratekit/limiter/internal/redistest"
)

// startTLSRedis starts a redis-server that speaks only TLS on a loopback port and asks
// every client for a certificate of p's CA (tls-auth-clients yes). It returns the address.
func startTLSRedis(t *testing.T, p *pki) string {
	t.Helper()
	bin := redistest.Require(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "--port", "0", "--tls-port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--tls-cert-file", p.serverCert, "--tls-key-file", p.serverKey, "--tls-ca-cert-file", p.caFile,
		"--tls-auth-clients", "yes", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	tc, err := tlsFlags{cert: p.clientCert, key: p.clientKey, ca: p.caFile}.config()
	require.NoError(t, err)
	c := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: tc, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("TLS redis-server on %s: %v", addr, err)
		}
		time.Sleep(10 * time.Millisecond) // polling a child process's readiness, not synchronising goroutines
	}
}

// TestRatekitdOnRedisWithMutualTLS: ratekitd decides on a Redis that takes only TLS
// clients with a certificate, named by a rediss:// URL or by the reference's REDIS_URL and
// REDIS_TLS; without its certificate it cannot reach it. Not parallel, nor is the Sentinel
// test: their redis-servers would slow the parallel tests' calls past the 200 ms
// --redis-timeout on a loaded machine.
func TestRatekitdOnRedisWithMutualTLS(t *testing.T) {
	p := newPKI(t, "redis.internal")
	addr := startTLSRedis(t, p)
	certs := []string{"--redis-tls-ca", p.caFile, "--redis-tls-cert", p.clientCert, "--redis-tls-key", p.clientKey, "--redis-timeout", "5s"}
	for _, target := range [][]string{
		{"--redis", "rediss://" + addr},
		{"--redis", addr, "--redis-tls"},
		{"--redis", "rediss://localhost:" + strconv.Itoa(addr2port(t, addr)), "--redis-tls-skip-hostname-verification"},
	} {
		in := start(t, append(append([]string{"--config", "../../examples"}, target...), certs...)...)
		assert.Equal(t, rlsv3.RateLimitResponse_OK, in.ask(t, "message_type", "marketing", "to_number", "206"), "%v", target)
	}
	// The name check is on by default: localhost is not among the certificate's names.
	err := run(context.Background(), append([]string{"--config", "../../examples", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
		"--redis", "rediss://localhost:" + strconv.Itoa(addr2port(t, addr))}, certs...), io.Discard, hooks{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "certificate")
	// Without the client certificate the server refuses the handshake.
	err = run(context.Background(), []string{"--config", "../../examples", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0",
		"--redis", "rediss://" + addr, "--redis-tls-ca", p.caFile}, io.Discard, hooks{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "redis rediss://"+addr)
}

func addr2port(t *testing.T, addr string) int {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	require.NoError(t, err)
	n, err := strconv.Atoi(port)
	require.NoError(t, err)
	return n
}

// TestRatekitdOnRedisSentinel: ratekitd finds the master through the sentinel, named by a
// redis+sentinel:// URL or by the reference's REDIS_TYPE=sentinel REDIS_URL, and decides
// there.
func TestRatekitdOnRedisSentinel(t *testing.T) {
	f := redistest.StartFailover(t, 5*time.Second)
	for i, target := range [][]string{
		{"--redis", "redis+sentinel://" + f.Sentinel.Addr() + "/" + redistest.SentinelMaster},
		{"--redis-type", "sentinel", "--redis", redistest.SentinelMaster + "," + f.Sentinel.Addr()},
	} {
		in := start(t, append([]string{"--config", "../../examples", "--redis-timeout", "5s", "--redis-prefix", "t" + strconv.Itoa(i) + ":"}, target...)...)
		assert.Equal(t, rlsv3.RateLimitResponse_OK, in.ask(t, "message_type", "marketing", "to_number", "206"), "%v", target)
		keys, err := f.Master.Client(t).Keys(context.Background(), "t"+strconv.Itoa(i)+":*").Result()
		require.NoError(t, err)
		assert.NotEmpty(t, keys, "the decision was written on the master")
	}
}
