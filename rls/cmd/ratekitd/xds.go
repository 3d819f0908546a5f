package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/ratekit/limiter/rls/server"
)

// The config types of envoyproxy/ratelimit's CONFIG_TYPE.
const (
	configTypeFile = "FILE"
	configTypeXDS  = "GRPC_XDS_SOTW"
)

// xdsFlags say where the rules come from: files (--config) or an xDS server, with
// envoyproxy/ratelimit's environment variables as defaults, as Envoy Gateway sets them.
type xdsFlags struct {
	configType   string
	server       string
	nodeID       string
	nodeMetadata string
	headers      string
	tls          bool
	cert, key    string
	ca, san      string
	forceStart   bool
}

// envOr is $name, or def when it is unset or empty.
func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func (x *xdsFlags) register(fs *flag.FlagSet) error {
	env, err := envBools("CONFIG_GRPC_XDS_SERVER_USE_TLS", "FORCE_START_WITHOUT_INITIAL_CONFIG")
	if err != nil {
		return err
	}
	fs.StringVar(&x.configType, "config-type", envOr("CONFIG_TYPE", configTypeFile), "where the rules come from: FILE (--config) or GRPC_XDS_SOTW (RateLimitConfig resources from an xDS server, --xds-server) (default $CONFIG_TYPE)")
	fs.StringVar(&x.server, "xds-server", envOr("CONFIG_GRPC_XDS_SERVER_URL", "localhost:18000"), "the xDS management server, host:port (default $CONFIG_GRPC_XDS_SERVER_URL)")
	fs.StringVar(&x.nodeID, "xds-node-id", envOr("CONFIG_GRPC_XDS_NODE_ID", "default"), "node id sent to the xDS server, which keeps a snapshot per node (default $CONFIG_GRPC_XDS_NODE_ID)")
	fs.StringVar(&x.nodeMetadata, "xds-node-metadata", os.Getenv("CONFIG_GRPC_XDS_NODE_METADATA"), "node metadata, k1=v1,k2=v2 (default $CONFIG_GRPC_XDS_NODE_METADATA)")
	fs.StringVar(&x.headers, "xds-headers", os.Getenv("CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS"), "gRPC headers sent to the xDS server, k1:v1,k2:v2 (default $CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS)")
	fs.BoolVar(&x.tls, "xds-tls", env["CONFIG_GRPC_XDS_SERVER_USE_TLS"], "TLS to the xDS server (default $CONFIG_GRPC_XDS_SERVER_USE_TLS)")
	fs.StringVar(&x.cert, "xds-tls-cert", os.Getenv("CONFIG_GRPC_XDS_CLIENT_TLS_CERT"), "PEM file of the client certificate for the xDS server (mTLS), with --xds-tls-key (default $CONFIG_GRPC_XDS_CLIENT_TLS_CERT)")
	fs.StringVar(&x.key, "xds-tls-key", os.Getenv("CONFIG_GRPC_XDS_CLIENT_TLS_KEY"), "PEM file of its key (default $CONFIG_GRPC_XDS_CLIENT_TLS_KEY)")
	fs.StringVar(&x.ca, "xds-tls-ca", os.Getenv("CONFIG_GRPC_XDS_SERVER_TLS_CACERT"), "PEM file of the CAs the xDS server's certificate chains to (default $CONFIG_GRPC_XDS_SERVER_TLS_CACERT; empty: the system's)")
	fs.StringVar(&x.san, "xds-tls-san", os.Getenv("CONFIG_GRPC_XDS_SERVER_TLS_SAN"), "name to check the xDS server's certificate for, if not the host of --xds-server (default $CONFIG_GRPC_XDS_SERVER_TLS_SAN)")
	fs.BoolVar(&x.forceStart, "force-start-without-initial-config", env["FORCE_START_WITHOUT_INITIAL_CONFIG"], "with GRPC_XDS_SOTW, serve before the first config arrives (answering UNAVAILABLE meanwhile); by default wait for it (default $FORCE_START_WITHOUT_INITIAL_CONFIG)")
	return nil
}

// check reads --config-type beside --config: one source of rules.
func (x *xdsFlags) check(config string) error {
	switch strings.ToUpper(x.configType) {
	case configTypeFile:
		if config == "" {
			return errors.New("--config PATH is required (a YAML file or a directory of them), or --config-type GRPC_XDS_SOTW")
		}
	case configTypeXDS:
		if config != "" {
			return errors.New("--config is for --config-type FILE; with GRPC_XDS_SOTW the rules come from --xds-server")
		}
	default:
		return fmt.Errorf("--config-type %q: want FILE or GRPC_XDS_SOTW", x.configType)
	}
	x.configType = strings.ToUpper(x.configType)
	return nil
}

func (x *xdsFlags) on() bool { return x.configType == configTypeXDS }

func (x *xdsFlags) options(log *slog.Logger) (server.XDSOptions, error) {
	o := server.XDSOptions{Server: x.server, NodeID: x.nodeID, Logger: log}
	var err error
	if o.NodeMetadata, err = server.ParseXDSPairs(x.nodeMetadata, "="); err != nil {
		return o, fmt.Errorf("--xds-node-metadata: %w", err)
	}
	if o.Headers, err = server.ParseXDSPairs(x.headers, ":"); err != nil {
		return o, fmt.Errorf("--xds-headers: %w", err)
	}
	if !x.tls {
		if x.cert != "" || x.key != "" || x.ca != "" || x.san != "" {
			return o, errors.New("--xds-tls-cert, --xds-tls-key, --xds-tls-ca and --xds-tls-san need --xds-tls (CONFIG_GRPC_XDS_SERVER_USE_TLS=true)")
		}
		return o, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: x.san}
	if (x.cert == "") != (x.key == "") {
		return o, errors.New("--xds-tls-cert and --xds-tls-key go together")
	}
	if x.cert != "" {
		pair, err := tls.LoadX509KeyPair(x.cert, x.key)
		if err != nil {
			return o, fmt.Errorf("--xds-tls-cert, --xds-tls-key: %w", err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	if x.ca != "" {
		pem, err := os.ReadFile(x.ca)
		if err != nil {
			return o, fmt.Errorf("--xds-tls-ca: %w", err)
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return o, fmt.Errorf("--xds-tls-ca %s: no PEM certificate in it", x.ca)
		}
	}
	o.TLS = c
	return o, nil
}

// startXDS follows the xDS server for svc until ctx ends and, unless
// --force-start-without-initial-config, waits for its first config, as
// envoyproxy/ratelimit waits before it serves. It returns false when ctx ended first.
func startXDS(ctx context.Context, x *xdsFlags, svc *server.Service, log *slog.Logger) (bool, error) {
	o, err := x.options(log)
	if err != nil {
		return false, err
	}
	src, err := server.NewXDS(svc, o)
	if err != nil {
		return false, err
	}
	errc := make(chan error, 1)
	go func() { errc <- src.Run(ctx) }()
	if x.forceStart {
		go func() {
			if err := <-errc; err != nil {
				log.Error("xds: no config source", slog.Any("error", err))
			}
		}()
		return true, nil
	}
	log.Info("waiting for the first config from the xDS server", slog.String("xds", x.server), slog.String("node", x.nodeID))
	select {
	case <-src.Ready():
		return true, nil
	case err := <-errc:
		return false, err
	case <-ctx.Done():
		return false, nil
	}
}
