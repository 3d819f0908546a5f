package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// tlsFlags are the TLS settings of the Redis connections, under envoyproxy/ratelimit's
// environment variables' names: REDIS_TLS, REDIS_TLS_CLIENT_CERT, REDIS_TLS_CLIENT_KEY,
// REDIS_TLS_CACERT and REDIS_TLS_SKIP_HOSTNAME_VERIFICATION.
type tlsFlags struct {
	on           bool   // TLS on a redis:// URL or a REDIS_URL host:port
	cert, key    string // the client's certificate and key (mTLS), PEM files
	ca           string // a PEM file of CAs the server's certificate may chain to, beside the system's
	skipHostname bool   // check the chain but not the name (GCP Memorystore's certificates)
}

// set reports whether a setting that needs TLS is given.
func (t tlsFlags) set() bool { return t.cert != "" || t.key != "" || t.ca != "" || t.skipHostname }

// config builds the client's TLS config, as envoyproxy/ratelimit builds it from the same
// settings (utils.TlsConfigFromFiles): the client certificate when both files are given,
// the CA file added to the system's pool, and, when the hostname is not to be checked,
// the chain still checked against those roots. A file that cannot be read, a certificate
// without its key and a CA file without a certificate are errors (the reference panics on
// the first and ignores the others).
func (t tlsFlags) config() (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case (t.cert == "") != (t.key == ""):
		return nil, errors.New("--redis-tls-cert and --redis-tls-key (REDIS_TLS_CLIENT_CERT, REDIS_TLS_CLIENT_KEY) go together")
	case t.cert != "":
		pair, err := tls.LoadX509KeyPair(t.cert, t.key)
		if err != nil {
			return nil, fmt.Errorf("--redis-tls-cert, --redis-tls-key: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	if t.ca != "" {
		pem, err := os.ReadFile(t.ca)
		if err != nil {
			return nil, fmt.Errorf("--redis-tls-ca: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--redis-tls-ca %s: no PEM certificate in it", t.ca)
		}
		c.RootCAs = pool
	}
	if t.skipHostname {
		// InsecureSkipVerify turns off Go's whole check; the chain is checked here again,
		// against the same roots, without a name.
		c.InsecureSkipVerify = true
		roots := c.RootCAs
		c.VerifyPeerCertificate = func(raw [][]byte, _ [][]*x509.Certificate) error {
			return verifyChain(raw, roots)
		}
	}
	return c, nil
}

// verifyChain checks that the certificates a server sent (leaf first) chain to roots (nil:
// the system's), whatever name the leaf holds.
func verifyChain(raw [][]byte, roots *x509.CertPool) error {
	if len(raw) == 0 {
		return errors.New("tls: the server sent no certificate")
	}
	certs := make([]*x509.Certificate, len(raw))
	for i, der := range raw {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			return fmt.Errorf("tls: the server's certificate: %w", err)
		}
		certs[i] = c
	}
	opts := x509.VerifyOptions{Roots: roots, Intermediates: x509.NewCertPool()}
	for _, c := range certs[1:] {
		opts.Intermediates.AddCert(c)
	}
	_, err := certs[0].Verify(opts)
	return err
}
