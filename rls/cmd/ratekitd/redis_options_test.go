package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRedisOptions: every way to name a Redis, a Cluster or a Sentinel group, in our URLs
// and in envoyproxy/ratelimit's REDIS_URL + REDIS_TYPE, becomes go-redis's options.
func TestRedisOptions(t *testing.T) {
	t.Parallel()
	t.Run("sentinel URL", func(t *testing.T) {
		c, err := redisOptions(storeFlags{redis: "redis+sentinel://u:p@s1:26379,s2:26380/mymaster/2?dial_timeout=1s", sentinelAuth: "su:sp"})
		require.NoError(t, err)
		o := c.failover
		require.NotNil(t, o)
		assert.Equal(t, []string{"s1:26379", "s2:26380"}, o.SentinelAddrs)
		assert.Equal(t, "mymaster", o.MasterName)
		assert.Equal(t, 2, o.DB)
		assert.Equal(t, time.Second, o.DialTimeout)
		assert.Equal(t, [4]string{"u", "p", "su", "sp"}, [4]string{o.Username, o.Password, o.SentinelUsername, o.SentinelPassword})
		assert.Nil(t, o.TLSConfig)
		assert.True(t, o.ContextTimeoutEnabled)
		assert.Equal(t, "redis+sentinel://s1:26379,s2:26380/mymaster", c.desc)
	})
	t.Run("reference sentinel", func(t *testing.T) {
		c, err := redisOptions(storeFlags{redis: "mymaster,s1:26379,s2:26379", redisType: "SENTINEL", auth: "pw", tls: tlsFlags{on: true}})
		require.NoError(t, err)
		o := c.failover
		require.NotNil(t, o)
		assert.Equal(t, []string{"s1:26379", "s2:26379"}, o.SentinelAddrs)
		assert.Equal(t, "mymaster", o.MasterName)
		assert.Equal(t, [2]string{"", "pw"}, [2]string{o.Username, o.Password})
		require.NotNil(t, o.TLSConfig, "REDIS_TLS reaches the sentinels and the nodes")
		assert.Empty(t, o.TLSConfig.ServerName, "each connection checks the name of the host it dials")
		assert.Equal(t, "rediss+sentinel://s1:26379,s2:26379/mymaster", c.desc)
	})
	t.Run("reference cluster", func(t *testing.T) {
		c, err := redisOptions(storeFlags{redis: "n1:7000,n2:7001", redisType: "cluster", auth: "user:pw"})
		require.NoError(t, err)
		require.NotNil(t, c.cluster)
		assert.Equal(t, []string{"n1:7000", "n2:7001"}, c.cluster.Addrs)
		assert.Equal(t, [2]string{"user", "pw"}, [2]string{c.cluster.Username, c.cluster.Password})
		assert.Nil(t, c.cluster.TLSConfig)
	})
	t.Run("rediss cluster names no server", func(t *testing.T) {
		c, err := redisOptions(storeFlags{redis: "rediss+cluster://n1:7000,n2:7001"})
		require.NoError(t, err)
		require.NotNil(t, c.cluster.TLSConfig)
		assert.Empty(t, c.cluster.TLSConfig.ServerName)
	})
	t.Run("reference single", func(t *testing.T) {
		c, err := redisOptions(storeFlags{redis: "redis.internal:6379", redisType: "single", tls: tlsFlags{on: true}})
		require.NoError(t, err)
		require.NotNil(t, c.single)
		assert.Equal(t, "redis.internal:6379", c.single.Addr)
		require.NotNil(t, c.single.TLSConfig)
		assert.Equal(t, uint16(tls.VersionTLS12), c.single.TLSConfig.MinVersion)
		assert.Equal(t, "rediss://redis.internal:6379", c.desc)
	})
	t.Run("redis URL with --redis-tls", func(t *testing.T) {
		c, err := redisOptions(storeFlags{redis: "redis://h:6379", tls: tlsFlags{on: true}})
		require.NoError(t, err)
		assert.NotNil(t, c.single.TLSConfig)
		assert.Equal(t, "redis://h:6379 (TLS)", c.desc)
	})
	t.Run("unix socket", func(t *testing.T) {
		c, err := redisOptions(storeFlags{redis: "/var/run/nutcracker/ratelimit.sock"})
		require.NoError(t, err)
		assert.Equal(t, "unix", c.single.Network)
		assert.Equal(t, "/var/run/nutcracker/ratelimit.sock", c.single.Addr)
	})
	t.Run("skip_verify kept", func(t *testing.T) {
		c, err := redisOptions(storeFlags{redis: "rediss://h:6379?skip_verify=true"})
		require.NoError(t, err)
		assert.True(t, c.single.TLSConfig.InsecureSkipVerify)
		assert.Nil(t, c.single.TLSConfig.VerifyPeerCertificate)
	})
	for _, tc := range []struct {
		name string
		f    storeFlags
		want string
	}{
		{"one-item sentinel", storeFlags{redis: "mymaster", redisType: "sentinel"}, "want <master name>,<sentinel host:port>"},
		{"sentinel without master", storeFlags{redis: "redis+sentinel://s1:26379"}, "want the master's name"},
		{"master twice", storeFlags{redis: "redis+sentinel://s1:26379/m?master_name=n"}, "master_name= is given by the URL's path"},
		{"unknown type", storeFlags{redis: "h:1", redisType: "memcache"}, `--redis-type "memcache"`},
		{"type against scheme", storeFlags{redis: "redis://h:1", redisType: "cluster"}, "--redis-type cluster (REDIS_TYPE) beside a redis:// URL"},
		{"sentinel auth elsewhere", storeFlags{redis: "redis://h:1", sentinelAuth: "x"}, "--redis-sentinel-auth (REDIS_SENTINEL_AUTH) is for Redis Sentinel only"},
		{"auth twice", storeFlags{redis: "redis://u:p@h:1", auth: "x"}, "--redis-auth (REDIS_AUTH) beside a password"},
		{"bad auth", storeFlags{redis: "redis://h:1", auth: "u:"}, "--redis-auth: want password or user:password"},
		{"CA without TLS", storeFlags{redis: "redis://h:1", tls: tlsFlags{ca: "/x.pem"}}, "need TLS"},
		{"cert without key", storeFlags{redis: "rediss://h:1", tls: tlsFlags{cert: "/x.pem"}}, "go together"},
		{"missing CA file", storeFlags{redis: "rediss://h:1", tls: tlsFlags{ca: "/nonexistent.pem"}}, "--redis-tls-ca"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := redisOptions(tc.f)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestRedisFlagsFromTheReferenceEnvironment: an envoyproxy/ratelimit deployment keeps its
// environment; a flag given on the command line wins over it.
func TestRedisFlagsFromTheReferenceEnvironment(t *testing.T) {
	for k, v := range map[string]string{
		"REDIS_URL": "mymaster,s1:26379", "REDIS_TYPE": "sentinel", "REDIS_AUTH": "pw", "REDIS_SENTINEL_AUTH": "spw",
		"REDIS_TLS": "true", "REDIS_TLS_CLIENT_CERT": "/c.pem", "REDIS_TLS_CLIENT_KEY": "/k.pem", "REDIS_TLS_CACERT": "/ca.pem",
		"REDIS_TLS_SKIP_HOSTNAME_VERIFICATION": "1",
	} {
		t.Setenv(k, v)
	}
	f, err := parseFlags([]string{"--config", "x.yaml", "--redis-tls-ca", "/other.pem"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, storeFlags{redis: "mymaster,s1:26379", redisType: "sentinel", auth: "pw", sentinelAuth: "spw",
		tls: tlsFlags{on: true, cert: "/c.pem", key: "/k.pem", ca: "/other.pem", skipHostname: true}},
		storeFlags{redis: f.store.redis, redisType: f.store.redisType, auth: f.store.auth, sentinelAuth: f.store.sentinelAuth, tls: f.store.tls})

	t.Setenv("REDIS_TLS", "yes please")
	_, err = parseFlags([]string{"--config", "x.yaml"}, io.Discard)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `$REDIS_TLS="yes please": want true or false`)
}

// TestRedisTLSConfig: the client certificate and the CA file are loaded; without the
// hostname check the chain is still checked against the CA.
func TestRedisTLSConfig(t *testing.T) {
	t.Parallel()
	pki := newPKI(t, "redis.internal")
	c, err := tlsFlags{on: true, cert: pki.clientCert, key: pki.clientKey, ca: pki.caFile}.config()
	require.NoError(t, err)
	require.Len(t, c.Certificates, 1)
	assert.False(t, c.InsecureSkipVerify)
	_, err = pki.server.Verify(x509.VerifyOptions{Roots: c.RootCAs, DNSName: "redis.internal"})
	require.NoError(t, err, "the CA file is trusted")

	skip, err := tlsFlags{on: true, ca: pki.caFile, skipHostname: true}.config()
	require.NoError(t, err)
	assert.True(t, skip.InsecureSkipVerify)
	require.NotNil(t, skip.VerifyPeerCertificate)
	assert.NoError(t, skip.VerifyPeerCertificate([][]byte{pki.server.Raw}, nil), "any name, our CA")
	other := newPKI(t, "redis.internal")
	assert.Error(t, skip.VerifyPeerCertificate([][]byte{other.server.Raw}, nil), "another CA")
	assert.Error(t, skip.VerifyPeerCertificate(nil, nil))
}

// pki is a throw-away CA with a server certificate (for 127.0.0.1 and name) and a
// client certificate, written as PEM files into a temporary directory.
type pki struct {
	caFile, serverCert, serverKey, clientCert, clientKey string
	server                                               *x509.Certificate
}

func newPKI(tb testing.TB, name string) *pki {
	tb.Helper()
	dir := tb.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(tb, err)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ratekitd test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	require.NoError(tb, err)
	ca, err = x509.ParseCertificate(caDER)
	require.NoError(tb, err)
	p := &pki{caFile: writePEM(tb, dir, "ca.pem", "CERTIFICATE", caDER)}
	leaf := func(serial int64, usage x509.ExtKeyUsage, file string) (*x509.Certificate, string, string) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(tb, err)
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
			DNSNames: []string{name}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		require.NoError(tb, err)
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		require.NoError(tb, err)
		c, err := x509.ParseCertificate(der)
		require.NoError(tb, err)
		return c, writePEM(tb, dir, file+".pem", "CERTIFICATE", der), writePEM(tb, dir, file+"-key.pem", "PRIVATE KEY", keyDER)
	}
	p.server, p.serverCert, p.serverKey = leaf(2, x509.ExtKeyUsageServerAuth, "server")
	_, p.clientCert, p.clientKey = leaf(3, x509.ExtKeyUsageClientAuth, "client")
	return p
}

func writePEM(tb testing.TB, dir, name, typ string, der []byte) string {
	tb.Helper()
	path := filepath.Join(dir, name)
	require.NoError(tb, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600))
	return path
}
