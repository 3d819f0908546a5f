package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"github.com/envoyproxy/go-control-plane/pkg/client/sotw/v3"
	"github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	rlconfv3 "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"go.yaml.in/yaml/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/ratekit/limiter/algo"
)

// ConfigFromXDS builds a Config from RateLimitConfig resources, as envoyproxy/ratelimit
// reads them from an xDS server (CONFIG_TYPE=GRPC_XDS_SOTW): each resource is one domain,
// written out as the YAML file it stands for and read by Load's parser, so that a
// resource is refused exactly where the same file would be. An error names the resource
// ("xds:NAME") and the field. No resource is an empty Config: every domain is unknown.
func ConfigFromXDS(resources []*rlconfv3.RateLimitConfig) (*Config, error) {
	srcs := make([]source, 0, len(resources))
	for i, r := range resources {
		name := "xds:" + r.GetName()
		if r.GetName() == "" {
			name = fmt.Sprintf("xds:[%d]", i)
		}
		data, err := yaml.Marshal(xdsFile{Domain: r.GetDomain(), Descriptors: xdsDescriptors(r.GetDescriptors())})
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", algo.ErrInvalidConfig, name, err)
		}
		srcs = append(srcs, source{name: name, data: data})
	}
	return parseSources(srcs)
}

// pendingConfig is the Config of a Service whose rules have not arrived yet.
var pendingConfig = &Config{domains: map[string]*domain{}}

// PendingConfig returns a Config under which a Service answers every call with
// UNAVAILABLE until SetConfig replaces it: the Config to start with when the rules come
// from an xDS server and the Service is to serve before they arrive. envoyproxy/ratelimit
// answers an error then too ("no rate limit configuration loaded"), so Envoy's
// failure_mode_deny decides.
func PendingConfig() *Config { return pendingConfig }

// xdsFile and the types below are the YAML a RateLimitConfig stands for, field by field
// as envoyproxy/ratelimit converts it (config.ConfigXdsProtoToYaml). The proto has no
// field for our extensions (rate, algorithm, burst, charge) nor for unit_multiplier,
// value_to_metric and share_threshold.
type xdsFile struct {
	Domain      string          `yaml:"domain"`
	Descriptors []xdsDescriptor `yaml:"descriptors,omitempty"`
}

type xdsDescriptor struct {
	Key            string          `yaml:"key"`
	Value          string          `yaml:"value,omitempty"`
	RateLimit      *xdsRule        `yaml:"rate_limit,omitempty"`
	Descriptors    []xdsDescriptor `yaml:"descriptors,omitempty"`
	ShadowMode     bool            `yaml:"shadow_mode,omitempty"`
	DetailedMetric bool            `yaml:"detailed_metric,omitempty"`
	QuotaMode      bool            `yaml:"quota_mode,omitempty"`
	Metadata       map[string]any  `yaml:"metadata,omitempty"`
}

type xdsRule struct {
	// Unit is left out when UNKNOWN (the proto's zero), which is how a rule says
	// unlimited; a rule with neither is refused as a file without a unit is.
	Unit            string       `yaml:"unit,omitempty"`
	RequestsPerUnit uint32       `yaml:"requests_per_unit"`
	Unlimited       bool         `yaml:"unlimited,omitempty"`
	Name            string       `yaml:"name,omitempty"`
	Replaces        []xdsReplace `yaml:"replaces,omitempty"`
}

type xdsReplace struct {
	Name string `yaml:"name"`
}

func xdsDescriptors(pb []*rlconfv3.RateLimitDescriptor) []xdsDescriptor {
	if len(pb) == 0 {
		return nil
	}
	out := make([]xdsDescriptor, len(pb))
	for i, d := range pb {
		out[i] = xdsDescriptor{
			Key:            d.GetKey(),
			Value:          d.GetValue(),
			RateLimit:      xdsRuleOf(d.GetRateLimit()),
			Descriptors:    xdsDescriptors(d.GetDescriptors()),
			ShadowMode:     d.GetShadowMode(),
			DetailedMetric: d.GetDetailedMetric(),
			QuotaMode:      d.GetQuotaMode(),
		}
		if md := d.GetMetadata(); md != nil {
			out[i].Metadata = md.AsMap()
		}
	}
	return out
}

func xdsRuleOf(pb *rlconfv3.RateLimitPolicy) *xdsRule {
	if pb == nil {
		return nil
	}
	r := &xdsRule{RequestsPerUnit: pb.GetRequestsPerUnit(), Unlimited: pb.GetUnlimited(), Name: pb.GetName()}
	if u := pb.GetUnit(); u != rlconfv3.RateLimitUnit_UNKNOWN {
		r.Unit = strings.ToLower(u.String()) // an unnamed number stays a number, and is refused
	}
	for _, rp := range pb.GetReplaces() {
		r.Replaces = append(r.Replaces, xdsReplace{Name: rp.GetName()})
	}
	return r
}

// XDSOptions configure an XDS source: envoyproxy/ratelimit's CONFIG_GRPC_XDS_* settings.
type XDSOptions struct {
	// Server is the management server's gRPC target, host:port
	// (CONFIG_GRPC_XDS_SERVER_URL).
	Server string
	// NodeID names this instance to the server, which keeps a snapshot per node
	// (CONFIG_GRPC_XDS_NODE_ID; Envoy Gateway's is "envoy-ratelimit").
	NodeID string
	// NodeMetadata is sent as the node's metadata (CONFIG_GRPC_XDS_NODE_METADATA).
	NodeMetadata map[string]string
	// Headers are added to the stream's gRPC metadata, e.g. for authorization
	// (CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS).
	Headers map[string]string
	// TLS, when set, secures the connection (CONFIG_GRPC_XDS_SERVER_USE_TLS); nil is
	// plaintext.
	TLS *tls.Config
	// DialOptions are added to the connection's (tests dial in memory with them).
	DialOptions []grpc.DialOption
	// RetryMin and RetryMax bound the wait before a new stream after one ended: it starts
	// at RetryMin (default 500ms) and doubles up to RetryMax (default 30s), and starts
	// again after a stream that delivered a response. The connection itself reconnects
	// with gRPC's own backoff. RetryMin is also the first wait before NACKing again a set
	// of resources already refused (doubling up to 5s).
	RetryMin, RetryMax time.Duration
	// Logger receives the updates, refusals and stream ends; nil is the Service's.
	Logger *slog.Logger
}

// XDS keeps a Service's configuration in step with an xDS management server, as
// envoyproxy/ratelimit does with CONFIG_TYPE=GRPC_XDS_SOTW: one Aggregated Discovery
// Service stream, State of the World, subscribed to RateLimitConfig resources. Each
// response is the whole set of domains: it replaces the Service's Config at once (a
// domain left out goes away), as a file reload does, and is ACKed; a response that does
// not load is NACKed with the error, and the Service keeps the last good Config.
type XDS struct {
	svc   *Service
	o     XDSOptions
	log   *slog.Logger
	ready chan struct{}
	once  sync.Once

	// The last set refused, its error, and the wait before NACKing it again: a
	// go-control-plane snapshot cache answers a NACK by sending the same set at once, so
	// without a wait client and server would loop as fast as they can until the set is
	// fixed. The set is not read again, logged or counted again meanwhile.
	refused    [sha256.Size]byte
	refusedErr string
	nackWait   time.Duration
}

// maxNackWait bounds the wait before NACKing a set refused already: the server sends its
// next version only after the NACK, so this is also the longest a fix waits.
const maxNackWait = 5 * time.Second

// NewXDS returns an XDS source for svc; Run starts it.
func NewXDS(svc *Service, o XDSOptions) (*XDS, error) {
	if o.Server == "" {
		return nil, fmt.Errorf("%w: xds: no server address", algo.ErrInvalidConfig)
	}
	if o.RetryMin <= 0 {
		o.RetryMin = 500 * time.Millisecond
	}
	if o.RetryMax < o.RetryMin {
		o.RetryMax = max(30*time.Second, o.RetryMin)
	}
	if o.Logger == nil {
		o.Logger = svc.log
	}
	return &XDS{svc: svc, o: o, log: o.Logger.With(slog.String("xds", o.Server)), ready: make(chan struct{})}, nil
}

// Ready is closed once a response from the server has been applied.
func (x *XDS) Ready() <-chan struct{} { return x.ready }

// Run follows the server until ctx ends, opening a new stream whenever one ends. It
// returns an error only when the connection cannot be set up at all (a bad address).
func (x *XDS) Run(ctx context.Context) error {
	creds := insecure.NewCredentials()
	if x.o.TLS != nil {
		creds = credentials.NewTLS(x.o.TLS)
	}
	conn, err := grpc.NewClient(x.o.Server, append([]grpc.DialOption{grpc.WithTransportCredentials(creds)}, x.o.DialOptions...)...)
	if err != nil {
		return fmt.Errorf("xds: %w", err)
	}
	defer conn.Close()
	// One client for every stream: it keeps the version last ACKed, which a new stream
	// sends, so the server resends the set only when it changed meanwhile.
	client := sotw.NewADSClient(metadata.NewOutgoingContext(ctx, metadata.New(x.o.Headers)), x.node(), resource.RateLimitConfigType)
	wait := x.o.RetryMin
	for {
		got, err := x.stream(ctx, client, conn)
		if ctx.Err() != nil {
			return nil
		}
		if got {
			wait = x.o.RetryMin
		}
		x.log.Warn("xds stream ended; opening a new one", slog.Any("error", err), slog.Duration("in", wait))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		wait = min(2*wait, x.o.RetryMax)
	}
}

// stream opens one ADS stream and applies its responses until it ends; got reports
// whether a response came.
func (x *XDS) stream(ctx context.Context, client sotw.ADSClient, conn *grpc.ClientConn) (got bool, err error) {
	// WaitForReady: the stream waits for the connection (gRPC redials with its own
	// backoff) rather than failing while the server is away.
	if err := client.InitConnect(conn, grpc.WaitForReady(true)); err != nil {
		return false, err
	}
	for {
		resp, err := client.Fetch()
		if err != nil {
			return got, err
		}
		got = true
		if sum := hashResources(resp.Resources); sum == x.refused {
			t := time.NewTimer(x.nackWait)
			select {
			case <-ctx.Done():
				t.Stop()
				return got, ctx.Err()
			case <-t.C:
			}
			x.nackWait = min(2*x.nackWait, maxNackWait)
			if err := client.Nack(x.refusedErr); err != nil {
				return got, err
			}
			continue
		} else if err := x.apply(resp.Resources); err != nil {
			x.log.Error("xds config refused (NACK); keeping the running one", slog.Any("error", err))
			x.refused, x.refusedErr, x.nackWait = sum, err.Error(), x.o.RetryMin
			if err := client.Nack(x.refusedErr); err != nil {
				return got, err
			}
			continue
		}
		x.refused = [sha256.Size]byte{}
		if err := client.Ack(); err != nil {
			return got, err
		}
	}
}

// apply loads one response's resources and makes them the Service's Config.
func (x *XDS) apply(res []*anypb.Any) error {
	confs := make([]*rlconfv3.RateLimitConfig, len(res))
	for i, a := range res {
		confs[i] = &rlconfv3.RateLimitConfig{}
		if err := a.UnmarshalTo(confs[i]); err != nil {
			x.svc.metrics.reloadsKO.Add(1)
			return fmt.Errorf("%w: xds resource %d (%s): %v", algo.ErrInvalidConfig, i, a.GetTypeUrl(), err)
		}
	}
	// In name order: the server's order changes from one response to the next, and the
	// error for a domain defined twice should not.
	slices.SortStableFunc(confs, func(a, b *rlconfv3.RateLimitConfig) int { return strings.Compare(a.GetName(), b.GetName()) })
	cfg, err := ConfigFromXDS(confs)
	if err != nil {
		x.svc.metrics.reloadsKO.Add(1)
		return err
	}
	x.svc.SetConfig(cfg)
	x.svc.metrics.reloadsOK.Add(1)
	x.log.Info("config from xds", slog.Any("domains", cfg.Domains()))
	x.once.Do(func() { close(x.ready) })
	return nil
}

// hashResources identifies a set of resources by their bytes, in any order: a snapshot
// cache sends the same set in a different order each time.
func hashResources(res []*anypb.Any) [sha256.Size]byte {
	sums := make([][sha256.Size]byte, len(res))
	for i, a := range res {
		sums[i] = sha256.Sum256(append([]byte(a.GetTypeUrl()+"\x00"), a.GetValue()...))
	}
	slices.SortFunc(sums, func(a, b [sha256.Size]byte) int { return bytes.Compare(a[:], b[:]) })
	h := sha256.New()
	for _, s := range sums {
		h.Write(s[:])
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

func (x *XDS) node() *corev3.Node {
	n := &corev3.Node{Id: x.o.NodeID}
	if len(x.o.NodeMetadata) > 0 {
		fields := make(map[string]*structpb.Value, len(x.o.NodeMetadata))
		for k, v := range x.o.NodeMetadata {
			fields[k] = structpb.NewStringValue(v)
		}
		n.Metadata = &structpb.Struct{Fields: fields}
	}
	return n
}

// ParseXDSPairs reads envoyproxy/ratelimit's lists of pairs, "k1:v1,k2:v2"
// (CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS) or "k1=v1,k2=v2"
// (CONFIG_GRPC_XDS_NODE_METADATA), with sep between key and value. Empty is no pair.
func ParseXDSPairs(s string, sep string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	m := map[string]string{}
	for item := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(item, sep)
		if !ok || strings.TrimSpace(k) == "" {
			return nil, errors.New("want key" + sep + "value pairs separated by commas, got " + fmt.Sprintf("%q", item))
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m, nil
}
