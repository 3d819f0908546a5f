package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/ratekit/limiter/clockx"
)

// listenerTLS are the TLS settings of one of ratekitd's listeners.
type listenerTLS struct {
	on        bool
	cert, key string // the server's certificate chain and key, PEM files
	clientCA  string // a PEM file of the CAs client certificates must chain to (mTLS)
	clientSAN string // a name a client certificate must hold (DNS, IP or URI SAN)
}

// listenersTLS are the TLS settings of the gRPC listener, under envoyproxy/ratelimit's
// environment variables' names (GRPC_SERVER_USE_TLS, GRPC_SERVER_TLS_CERT,
// GRPC_SERVER_TLS_KEY, GRPC_CLIENT_TLS_CACERT, GRPC_CLIENT_TLS_SAN), and of the HTTP
// listener, which the reference serves in clear only.
type listenersTLS struct{ grpc, http listenerTLS }

// envListenerBools are the boolean environment variables the listeners' flags read.
var envListenerBools = []string{"GRPC_SERVER_USE_TLS"}

func (l *listenersTLS) register(fs *flag.FlagSet, envBools map[string]bool) {
	fs.BoolVar(&l.grpc.on, "grpc-tls", envBools["GRPC_SERVER_USE_TLS"], "serve gRPC over TLS, with --grpc-tls-cert and --grpc-tls-key (default $GRPC_SERVER_USE_TLS)")
	fs.StringVar(&l.grpc.cert, "grpc-tls-cert", os.Getenv("GRPC_SERVER_TLS_CERT"), "PEM file of the gRPC server's certificate chain, read again when it changes (default $GRPC_SERVER_TLS_CERT)")
	fs.StringVar(&l.grpc.key, "grpc-tls-key", os.Getenv("GRPC_SERVER_TLS_KEY"), "PEM file of the gRPC server's key, read again when it changes (default $GRPC_SERVER_TLS_KEY)")
	fs.StringVar(&l.grpc.clientCA, "grpc-tls-client-ca", os.Getenv("GRPC_CLIENT_TLS_CACERT"), "PEM file of the CAs gRPC clients' certificates must chain to: mTLS, a client without one is refused (default $GRPC_CLIENT_TLS_CACERT)")
	fs.StringVar(&l.grpc.clientSAN, "grpc-tls-client-san", os.Getenv("GRPC_CLIENT_TLS_SAN"), "a DNS name, IP or URI a gRPC client's certificate must hold, with --grpc-tls-client-ca (default $GRPC_CLIENT_TLS_SAN)")
	fs.BoolVar(&l.http.on, "http-tls", false, "serve HTTP over TLS, with --http-tls-cert and --http-tls-key, or else gRPC's certificate")
	fs.StringVar(&l.http.cert, "http-tls-cert", "", "PEM file of the HTTP server's certificate chain (default: --grpc-tls-cert)")
	fs.StringVar(&l.http.key, "http-tls-key", "", "PEM file of the HTTP server's key (default: --grpc-tls-key)")
	fs.StringVar(&l.http.clientCA, "http-tls-client-ca", "", "PEM file of the CAs HTTP clients' certificates must chain to: mTLS, a client without one is refused (health probes too)")
	fs.StringVar(&l.http.clientSAN, "http-tls-client-san", "", "a DNS name, IP or URI an HTTP client's certificate must hold, with --http-tls-client-ca")
}

// check refuses settings that cannot apply, where the reference ignores them: a TLS file
// without TLS would serve in clear what the operator meant to protect.
func (l listenerTLS) check(name, on string) error {
	switch {
	case !l.on && (l.cert != "" || l.key != "" || l.clientCA != "" || l.clientSAN != ""):
		return fmt.Errorf("--%s-tls-cert, --%[1]s-tls-key, --%[1]s-tls-client-ca and --%[1]s-tls-client-san need %s", name, on)
	case !l.on:
		return nil
	case l.cert == "" || l.key == "":
		if name == "http" {
			return errors.New("--http-tls needs both --http-tls-cert and --http-tls-key, or neither and gRPC's (--grpc-tls-cert, --grpc-tls-key)")
		}
		return fmt.Errorf("%s needs both --%s-tls-cert and --%[2]s-tls-key", on, name)
	case l.clientSAN != "" && l.clientCA == "":
		return fmt.Errorf("--%s-tls-client-san needs --%[1]s-tls-client-ca: without client certificates there is no name to check", name)
	}
	return nil
}

// configs checks the settings and loads the files: nil for a listener in clear.
func (l listenersTLS) configs(log *slog.Logger, clock clockx.Clock) (grpcTLS, httpTLS *tls.Config, err error) {
	h := l.http
	if h.on && h.cert == "" && h.key == "" {
		h.cert, h.key = l.grpc.cert, l.grpc.key
	}
	if err := l.grpc.check("grpc", "--grpc-tls (GRPC_SERVER_USE_TLS)"); err != nil {
		return nil, nil, err
	}
	if err := h.check("http", "--http-tls"); err != nil {
		return nil, nil, err
	}
	if clock == nil {
		clock = clockx.Real()
	}
	if l.grpc.on {
		s, err := newServerTLS("grpc", l.grpc, nil, log, clock)
		if err != nil {
			return nil, nil, err
		}
		grpcTLS = s.config()
	}
	if h.on {
		// net/http offers h2 only on the base config; the config a handshake gets must
		// offer it too.
		s, err := newServerTLS("http", h, []string{"h2", "http/1.1"}, log, clock)
		if err != nil {
			return nil, nil, err
		}
		httpTLS = s.config()
	}
	return grpcTLS, httpTLS, nil
}

// certCheckInterval is how often a handshake looks at the certificate files: at most
// one look (a stat per file) per interval, whatever the rate of handshakes.
const certCheckInterval = time.Second

// serverTLS serves a listener's handshakes with the certificate and client CAs of its
// files as they are now: a handshake that comes a second or more after the last look
// compares the files' stat with those last read, and reads them again when they changed.
// No goroutine watches them; a listener without handshakes reads nothing.
type serverTLS struct {
	name       string // grpc or http, for the logs
	clientSAN  string
	nextProtos []string
	log        *slog.Logger
	clock      clockx.Clock

	mu      sync.Mutex
	checked time.Time
	cert    *fileValue[*tls.Certificate]
	ca      *fileValue[*x509.CertPool] // nil without mTLS
	cfg     *tls.Config                // what handshakes get, built from cert and ca
}

func newServerTLS(name string, l listenerTLS, nextProtos []string, log *slog.Logger, clock clockx.Clock) (*serverTLS, error) {
	s := &serverTLS{name: name, clientSAN: l.clientSAN, nextProtos: nextProtos, log: log, clock: clock, checked: clock.Now()}
	s.cert = &fileValue[*tls.Certificate]{
		what:  fmt.Sprintf("--%s-tls-cert %s, --%[1]s-tls-key %s", name, l.cert, l.key),
		paths: []string{l.cert, l.key},
		load: func() (*tls.Certificate, error) {
			c, err := tls.LoadX509KeyPair(l.cert, l.key)
			return &c, err
		},
	}
	if err := s.cert.init(); err != nil {
		return nil, err
	}
	if l.clientCA != "" {
		s.ca = &fileValue[*x509.CertPool]{
			what:  fmt.Sprintf("--%s-tls-client-ca %s", name, l.clientCA),
			paths: []string{l.clientCA},
			load:  func() (*x509.CertPool, error) { return loadClientCAs(l.clientCA) },
		}
		if err := s.ca.init(); err != nil {
			return nil, err
		}
	}
	s.cfg = s.build()
	return s, nil
}

// loadClientCAs reads the CAs client certificates must chain to. Unlike the reference,
// not beside the system's: any certificate a public CA issued would pass otherwise.
func loadClientCAs(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("no PEM certificate in it")
	}
	return pool, nil
}

// config is the listener's tls.Config: everything comes from GetConfigForClient.
func (s *serverTLS) config() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetConfigForClient: s.forClient}
}

func (s *serverTLS) forClient(*tls.ClientHelloInfo) (*tls.Config, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	if d := now.Sub(s.checked); d >= certCheckInterval || d < 0 {
		s.checked = now
		certChanged := s.cert.refresh(s.log, s.name)
		caChanged := s.ca != nil && s.ca.refresh(s.log, s.name)
		if certChanged || caChanged {
			s.cfg = s.build()
		}
	}
	return s.cfg, nil
}

func (s *serverTLS) build() *tls.Config {
	c := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{*s.cert.val}, NextProtos: s.nextProtos}
	if s.ca != nil {
		c.ClientAuth = tls.RequireAndVerifyClientCert
		c.ClientCAs = s.ca.val
	}
	if s.clientSAN != "" {
		// VerifyConnection, not VerifyPeerCertificate: it also runs on resumed sessions.
		c.VerifyConnection = verifyClientSAN(s.clientSAN)
	}
	return c
}

// verifyClientSAN accepts a client certificate that holds san: as a DNS name or IP, as
// the reference checks GRPC_CLIENT_TLS_SAN (x509's hostname rules, wildcards included),
// or as a URI SAN (a SPIFFE ID, say), which the reference does not check.
func verifyClientSAN(san string) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tls: no client certificate")
		}
		leaf := cs.PeerCertificates[0]
		if leaf.VerifyHostname(san) == nil {
			return nil
		}
		for _, u := range leaf.URIs {
			if u.String() == san {
				return nil
			}
		}
		return fmt.Errorf("tls: the client certificate is not for %q", san)
	}
}

// fileValue is a value loaded from files, loaded again when one of them changes.
type fileValue[T any] struct {
	what  string   // the flags and files, for errors and logs
	paths []string // the files load reads
	load  func() (T, error)
	val   T             // the last good value
	seen  []os.FileInfo // the files at the last load, good or bad (nil: could not stat)
}

// init loads the value at start, where a bad file is an error.
func (f *fileValue[T]) init() error {
	f.seen = f.stat()
	v, err := f.load()
	if err != nil {
		return fmt.Errorf("%s: %w", f.what, err)
	}
	f.val = v
	return nil
}

// refresh loads the value again if a file changed since the last load, and reports
// whether the value changed. A bad new file keeps the last good value and is logged once:
// the next look finds the files as seen and does not read them again.
func (f *fileValue[T]) refresh(log *slog.Logger, listener string) bool {
	now := f.stat()
	if sameFiles(f.seen, now) {
		return false
	}
	f.seen = now
	v, err := f.load()
	if err != nil {
		log.Warn("TLS files changed but cannot be used: keeping the last good ones",
			slog.String("listener", listener), slog.String("files", f.what), slog.Any("err", err))
		return false
	}
	f.val = v
	log.Info("TLS files reloaded", slog.String("listener", listener), slog.String("files", f.what))
	return true
}

func (f *fileValue[T]) stat() []os.FileInfo {
	fis := make([]os.FileInfo, len(f.paths))
	for i, p := range f.paths {
		fis[i], _ = os.Stat(p) // a missing file is a state of its own: nil
	}
	return fis
}

// sameFiles reports whether two looks found the same files: the same identity (a file
// renamed over the path, as Kubernetes swaps a secret's volume, is another file),
// modification time and size.
func sameFiles(a, b []os.FileInfo) bool {
	for i := range a {
		switch {
		case a[i] == nil || b[i] == nil:
			if a[i] != b[i] {
				return false
			}
		case !os.SameFile(a[i], b[i]) || !a[i].ModTime().Equal(b[i].ModTime()) || a[i].Size() != b[i].Size():
			return false
		}
	}
	return true
}
