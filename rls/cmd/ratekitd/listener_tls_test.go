package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ratekit/limiter/clockx"
)

// served are the files a listener is given, copies that a test replaces.
type served struct{ cert, key, ca string }

// serve copies p's server certificate, its key and its CA into a directory of their own.
func serve(t *testing.T, p *pki) served {
	t.Helper()
	dir := t.TempDir()
	s := served{filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"), filepath.Join(dir, "ca.crt")}
	replaceFile(t, s.cert, p.serverCert)
	replaceFile(t, s.key, p.serverKey)
	replaceFile(t, s.ca, p.caFile)
	return s
}

// replaceFile puts src's content at dst by a rename, as certificate managers do.
func replaceFile(t *testing.T, dst, src string) {
	t.Helper()
	b, err := os.ReadFile(src)
	require.NoError(t, err)
	writeFile(t, dst, b)
}

func writeFile(t *testing.T, dst string, b []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(dst+".new", b, 0o600))
	require.NoError(t, os.Rename(dst+".new", dst))
}

// tlsClient is a client of p's CA, with p's client certificate if withCert.
func tlsClient(t *testing.T, p *pki, withCert bool) *tls.Config {
	t.Helper()
	roots := x509.NewCertPool()
	ca, err := os.ReadFile(p.caFile)
	require.NoError(t, err)
	require.True(t, roots.AppendCertsFromPEM(ca))
	c := &tls.Config{RootCAs: roots}
	if withCert {
		pair, err := tls.LoadX509KeyPair(p.clientCert, p.clientKey)
		require.NoError(t, err)
		c.Certificates = []tls.Certificate{pair}
	}
	return c
}

// askTLS makes one ShouldRateLimit call on a connection of its own.
func askTLS(t *testing.T, addr string, creds credentials.TransportCredentials) (rlsv3.RateLimitResponse_Code, error) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(creds))
	require.NoError(t, err)
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := rlsv3.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, request("message_type", "marketing", "to_number", "206"))
	if err != nil {
		return 0, err
	}
	return r.OverallCode, nil
}

// servedCert is the leaf certificate a handshake with addr gets, whoever signed it.
func servedCert(t *testing.T, addr string) *x509.Certificate {
	t.Helper()
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	require.NoError(t, err)
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0]
}

// TestGRPCOverTLS: with the reference's GRPC_SERVER_USE_TLS, GRPC_SERVER_TLS_CERT and
// GRPC_SERVER_TLS_KEY, ratekitd serves gRPC over TLS only.
func TestGRPCOverTLS(t *testing.T) {
	p := newPKI(t, "ratekitd.internal")
	t.Setenv("GRPC_SERVER_USE_TLS", "true")
	t.Setenv("GRPC_SERVER_TLS_CERT", p.serverCert)
	t.Setenv("GRPC_SERVER_TLS_KEY", p.serverKey)
	in := start(t, "--config", "../../examples")
	code, err := askTLS(t, in.grpcAddr, credentials.NewTLS(tlsClient(t, p, false)))
	require.NoError(t, err)
	assert.Equal(t, rlsv3.RateLimitResponse_OK, code)
	_, err = askTLS(t, in.grpcAddr, insecure.NewCredentials())
	assert.Error(t, err, "a client in clear")
	_, err = askTLS(t, in.grpcAddr, credentials.NewTLS(tlsClient(t, newPKI(t, "ratekitd.internal"), false)))
	assert.Error(t, err, "a client that trusts another CA")
	assert.Contains(t, in.log.String(), "grpc_tls=true")
}

// TestGRPCOverMutualTLS: with a client CA, a client without a certificate of that CA is
// refused; with a client SAN, one whose certificate lacks that name too.
func TestGRPCOverMutualTLS(t *testing.T) {
	t.Parallel()
	p := newPKI(t, "client.internal")
	other := newPKI(t, "client.internal")
	base := []string{"--config", "../../examples", "--grpc-tls", "--grpc-tls-cert", p.serverCert, "--grpc-tls-key", p.serverKey, "--grpc-tls-client-ca", p.caFile}
	in := start(t, base...)
	code, err := askTLS(t, in.grpcAddr, credentials.NewTLS(tlsClient(t, p, true)))
	require.NoError(t, err)
	assert.Equal(t, rlsv3.RateLimitResponse_OK, code)
	_, err = askTLS(t, in.grpcAddr, credentials.NewTLS(tlsClient(t, p, false)))
	assert.Error(t, err, "no client certificate")
	foreign := tlsClient(t, p, false)
	foreign.Certificates = tlsClient(t, other, true).Certificates
	_, err = askTLS(t, in.grpcAddr, credentials.NewTLS(foreign))
	assert.Error(t, err, "a client certificate of another CA")

	for san, ok := range map[string]bool{"client.internal": true, "127.0.0.1": true, "other.internal": false} {
		in := start(t, append(base, "--grpc-tls-client-san", san)...)
		_, err := askTLS(t, in.grpcAddr, credentials.NewTLS(tlsClient(t, p, true)))
		if ok {
			assert.NoError(t, err, san)
		} else {
			assert.Error(t, err, san)
		}
	}
}

// TestListenerTLSFilesReloaded: a certificate, its key or the client CA replaced on disk is
// served from the next handshake a second or more after the last look; a bad new file
// keeps the last good one and is logged once.
func TestListenerTLSFilesReloaded(t *testing.T) {
	t.Parallel()
	p1, p2 := newPKI(t, "client.internal"), newPKI(t, "client.internal")
	f := serve(t, p1)
	clock := clockx.NewFake(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	in := startWith(t, hooks{tlsClock: clock}, "--config", "../../examples",
		"--grpc-tls", "--grpc-tls-cert", f.cert, "--grpc-tls-key", f.key)
	require.Equal(t, p1.server.Raw, servedCert(t, in.grpcAddr).Raw)

	replaceFile(t, f.cert, p2.serverCert)
	replaceFile(t, f.key, p2.serverKey)
	assert.Equal(t, p1.server.Raw, servedCert(t, in.grpcAddr).Raw, "less than a second since the last look")
	clock.Add(time.Second)
	assert.Equal(t, p2.server.Raw, servedCert(t, in.grpcAddr).Raw, "the next handshake after a second")
	code, err := askTLS(t, in.grpcAddr, credentials.NewTLS(tlsClient(t, p2, false)))
	require.NoError(t, err)
	assert.Equal(t, rlsv3.RateLimitResponse_OK, code)

	// A certificate without its key (p1's certificate, p2's key), then garbage: p2's pair
	// stays, and each bad state is logged once however many handshakes look at it.
	replaceFile(t, f.cert, p1.serverCert)
	for range 3 {
		clock.Add(time.Second)
		assert.Equal(t, p2.server.Raw, servedCert(t, in.grpcAddr).Raw)
	}
	writeFile(t, f.cert, []byte("not a certificate"))
	for range 3 {
		clock.Add(time.Second)
		assert.Equal(t, p2.server.Raw, servedCert(t, in.grpcAddr).Raw)
	}
	assert.Equal(t, 2, strings.Count(in.log.String(), "cannot be used"), in.log.String())
	replaceFile(t, f.cert, p1.serverCert)
	replaceFile(t, f.key, p1.serverKey)
	clock.Add(time.Second)
	assert.Equal(t, p1.server.Raw, servedCert(t, in.grpcAddr).Raw, "good files again")
	assert.Equal(t, 2, strings.Count(in.log.String(), "TLS files reloaded"), in.log.String())
}

// TestClientCAReloaded: a client CA replaced on disk decides the next handshakes, also of a
// client that resumes a session from a ticket issued before the change (crypto/tls checks
// a resumed session's chain against the ClientCAs of the config the handshake gets).
func TestClientCAReloaded(t *testing.T) {
	t.Parallel()
	p1, p2 := newPKI(t, "client.internal"), newPKI(t, "client.internal")
	f := serve(t, p1)
	clock := clockx.NewFake(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	in := startWith(t, hooks{tlsClock: clock}, "--config", "../../examples",
		"--grpc-tls", "--grpc-tls-cert", f.cert, "--grpc-tls-key", f.key, "--grpc-tls-client-ca", f.ca)

	// p1's client, resuming sessions: the server's first answer (HTTP/2 SETTINGS) comes
	// after the ticket, so one read stores it; a read fails when the server refuses.
	cache := tls.NewLRUClientSessionCache(4)
	handshake := func(p *pki) (resumed bool, err error) {
		c := tlsClient(t, p, true)
		c.RootCAs = tlsClient(t, p1, false).RootCAs
		c.ClientSessionCache, c.NextProtos = cache, []string{"h2"}
		conn, err := tls.Dial("tcp", in.grpcAddr, c)
		if err != nil {
			return false, err
		}
		defer conn.Close()
		_, err = conn.Read(make([]byte, 1))
		return conn.ConnectionState().DidResume, err
	}
	_, err := handshake(p1)
	require.NoError(t, err)
	resumed, err := handshake(p1)
	require.NoError(t, err)
	require.True(t, resumed, "sessions resume while the files stay")

	replaceFile(t, f.ca, p2.caFile)
	clock.Add(time.Second)
	resumed, err = handshake(p1)
	assert.Error(t, err, "p1's client after the CA changed, even from its ticket")
	assert.False(t, resumed)
	_, err = askTLS(t, in.grpcAddr, credentials.NewTLS(tlsClient(t, p1, true)))
	assert.Error(t, err, "p1's client")
	p2Client := tlsClient(t, p2, true)
	p2Client.RootCAs = tlsClient(t, p1, false).RootCAs // the server's certificate is still p1's
	code, err := askTLS(t, in.grpcAddr, credentials.NewTLS(p2Client))
	require.NoError(t, err, "p2's client")
	assert.Equal(t, rlsv3.RateLimitResponse_OK, code)
}

// TestHTTPOverTLS: --http-tls serves /healthcheck and /json over TLS (HTTP/2 offered), with
// gRPC's certificate unless given its own, and with client certificates of its own CA.
func TestHTTPOverTLS(t *testing.T) {
	t.Parallel()
	p := newPKI(t, "client.internal")
	get := func(addr string, c *tls.Config) (*http.Response, error) {
		tr := &http.Transport{TLSClientConfig: c, ForceAttemptHTTP2: true}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get("https://" + addr + "/healthcheck")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return resp, err
	}

	in := start(t, "--config", "../../examples", "--grpc-tls", "--grpc-tls-cert", p.serverCert, "--grpc-tls-key", p.serverKey, "--http-tls")
	resp, err := get(in.httpAddr, tlsClient(t, p, false))
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "HTTP/2.0", resp.Proto)
	assert.Equal(t, p.server.Raw, resp.TLS.PeerCertificates[0].Raw)
	plain, err := http.Get("http://" + in.httpAddr + "/healthcheck")
	require.NoError(t, err)
	plain.Body.Close()
	assert.Equal(t, http.StatusBadRequest, plain.StatusCode, "a request in clear")

	// Its own certificate and client CA; gRPC stays in clear.
	other := newPKI(t, "client.internal")
	in = start(t, "--config", "../../examples", "--http-tls", "--http-tls-cert", other.serverCert, "--http-tls-key", other.serverKey, "--http-tls-client-ca", p.caFile)
	withCert := tlsClient(t, p, true)
	withCert.RootCAs = tlsClient(t, other, false).RootCAs
	resp, err = get(in.httpAddr, withCert)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	withoutCert := withCert.Clone()
	withoutCert.Certificates = nil
	_, err = get(in.httpAddr, withoutCert)
	assert.Error(t, err, "no client certificate")
	assert.Equal(t, rlsv3.RateLimitResponse_OK, in.ask(t, "message_type", "marketing", "to_number", "206"), "gRPC in clear")
}

// TestListenerTLSErrors: settings that cannot apply, and files that cannot be used, stop
// ratekitd at start.
func TestListenerTLSErrors(t *testing.T) {
	p := newPKI(t, "client.internal")
	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	require.NoError(t, os.WriteFile(garbage, []byte("not PEM"), 0o600))
	pair := []string{"--grpc-tls-cert", p.serverCert, "--grpc-tls-key", p.serverKey}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--grpc-tls"}, "--grpc-tls (GRPC_SERVER_USE_TLS) needs both --grpc-tls-cert and --grpc-tls-key"},
		{[]string{"--grpc-tls", "--grpc-tls-cert", p.serverCert}, "needs both"},
		{pair, "need --grpc-tls"},
		{[]string{"--grpc-tls-client-ca", p.caFile}, "need --grpc-tls"},
		{append([]string{"--grpc-tls", "--grpc-tls-client-san", "x"}, pair...), "--grpc-tls-client-san needs --grpc-tls-client-ca"},
		{[]string{"--grpc-tls", "--grpc-tls-cert", p.serverCert, "--grpc-tls-key", p.clientKey}, "private key does not match"},
		{[]string{"--grpc-tls", "--grpc-tls-cert", garbage, "--grpc-tls-key", p.serverKey}, "--grpc-tls-cert " + garbage},
		{append([]string{"--grpc-tls", "--grpc-tls-client-ca", garbage}, pair...), "no PEM certificate"},
		{append([]string{"--grpc-tls", "--grpc-tls-client-ca", "/nonexistent"}, pair...), "--grpc-tls-client-ca /nonexistent"},
		{[]string{"--http-tls"}, "--http-tls needs both --http-tls-cert and --http-tls-key, or neither and gRPC's"},
		{[]string{"--http-tls-cert", p.serverCert}, "need --http-tls"},
		{[]string{"--http-tls", "--http-tls-client-ca", p.caFile}, "or neither and gRPC's"},
		{append([]string{"--http-tls", "--http-tls-client-san", "x"}, pair...), "need --grpc-tls"},
		{append([]string{"--grpc-tls", "--http-tls", "--http-tls-client-san", "x"}, pair...), "--http-tls-client-san needs --http-tls-client-ca"},
	} {
		args := append([]string{"--config", "../../examples", "--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, tc.args...)
		err := run(context.Background(), args, io.Discard, hooks{})
		if assert.Error(t, err, "%q", tc.args) {
			assert.Contains(t, err.Error(), tc.want, "%q", tc.args)
		}
	}
	t.Setenv("GRPC_SERVER_USE_TLS", "yes please")
	err := run(context.Background(), []string{"--config", "../../examples"}, io.Discard, hooks{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "$GRPC_SERVER_USE_TLS")
}

// TestSameFiles: a file renamed over the path is another file even with the same size and
// modification time (a filesystem with coarse times, a copy that keeps them).
func TestSameFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path, other := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "other")
	require.NoError(t, os.WriteFile(path, []byte("one"), 0o600))
	require.NoError(t, os.WriteFile(other, []byte("two"), 0o600))
	mtime := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	require.NoError(t, os.Chtimes(path, mtime, mtime))
	require.NoError(t, os.Chtimes(other, mtime, mtime))
	f := &fileValue[int]{paths: []string{path}}
	before := f.stat()
	assert.True(t, sameFiles(before, f.stat()))
	require.NoError(t, os.Rename(other, path))
	assert.False(t, sameFiles(before, f.stat()), "renamed over")
	require.NoError(t, os.Remove(path))
	missing := f.stat()
	assert.False(t, sameFiles(before, missing), "removed")
	assert.True(t, sameFiles(missing, f.stat()), "still missing")
}

// BenchmarkForClient: what a handshake pays for the files' reload: a look within the
// second (a lock and the clock), and a look that stats the files.
func BenchmarkForClient(b *testing.B) {
	p := newPKI(b, "ratekitd.internal")
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name string
		step time.Duration
	}{{"cached", 0}, {"stat", time.Second}} {
		b.Run(tc.name, func(b *testing.B) {
			clock := clockx.NewFake(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
			s, err := newServerTLS("grpc", listenerTLS{on: true, cert: p.serverCert, key: p.serverKey, clientCA: p.caFile}, nil, log, clock)
			require.NoError(b, err)
			b.ReportAllocs()
			for b.Loop() {
				clock.Add(tc.step)
				if _, err := s.forClient(nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestVerifyClientSAN: the client SAN matches a DNS name (wildcards as x509 reads them), an
// IP or a URI of the client's certificate, and nothing else.
func TestVerifyClientSAN(t *testing.T) {
	t.Parallel()
	spiffe, err := url.Parse("spiffe://mesh.local/ns/edge/sa/envoy")
	require.NoError(t, err)
	leaf := &x509.Certificate{DNSNames: []string{"*.edge.internal"}, IPAddresses: []net.IP{net.IPv4(10, 0, 0, 7)}, URIs: []*url.URL{spiffe}}
	cs := tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}
	for san, ok := range map[string]bool{
		"envoy-1.edge.internal": true, "10.0.0.7": true, "spiffe://mesh.local/ns/edge/sa/envoy": true,
		"edge.internal": false, "a.b.edge.internal": false, "10.0.0.8": false, "spiffe://mesh.local/ns/edge/sa/other": false,
	} {
		err := verifyClientSAN(san)(cs)
		if ok {
			assert.NoError(t, err, san)
		} else {
			assert.Error(t, err, san)
		}
	}
	assert.Error(t, verifyClientSAN("x")(tls.ConnectionState{}), "no certificate")
}
