package grpclimit_test

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/grpclimit"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// Full method names of the health service, the service every test calls.
const (
	checkMethod = "/grpc.health.v1.Health/Check"
	watchMethod = "/grpc.health.v1.Health/Watch"
)

// epoch is a whole minute, so FixedWindow boundaries (aligned to the Unix epoch) fall on
// whole minutes of the fake clock.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newStore is the one place the tests make a local store: on clk, without a sweeper,
// closed when the test ends.
func newStore(tb testing.TB, clk clockx.Clock) *local.Store {
	tb.Helper()
	st, err := local.New(local.WithClock(clk), local.WithSweepInterval(0))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	return st
}

// newLimiter returns a limiter over a fresh local store, both on one fake clock at epoch.
func newLimiter(tb testing.TB, a algo.Algorithm, opts ...limiter.Option) (*limiter.Limiter, *clockx.Fake, *local.Store) {
	tb.Helper()
	clk := clockx.NewFake(epoch)
	st := newStore(tb, clk)
	l, err := limiter.New(st, a, opts...)
	if err != nil {
		tb.Fatalf("limiter.New: %v", err)
	}
	return l, clk, st
}

// newInterceptors is grpclimit.New that fails the test on an error.
func newInterceptors(tb testing.TB, l *limiter.Limiter, opts ...grpclimit.Option) *grpclimit.Interceptors {
	tb.Helper()
	lim, err := grpclimit.New(l, opts...)
	if err != nil {
		tb.Fatalf("grpclimit.New: %v", err)
	}
	return lim
}

// byMetadata is grpclimit.ByMetadata for a valid name.
func byMetadata(tb testing.TB, name string) grpclimit.KeyFunc {
	tb.Helper()
	key, err := grpclimit.ByMetadata(name)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

// server is a gRPC server with the health service behind the interceptors under test,
// listening on an in-memory connection.
type server struct {
	lis   *peerListener
	calls atomic.Int64 // calls that reached the health service
}

// startServer serves the health service (status SERVING) through lim's interceptors.
// With peers false, the server sees bufconn's own peer address ("bufconn"), which is no
// IP address; with peers true it sees the address each client dials (see dial).
func startServer(tb testing.TB, lim *grpclimit.Interceptors, peers bool) *server {
	tb.Helper()
	s := &server{lis: &peerListener{Listener: bufconn.Listen(1 << 16), peers: peers, next: make(chan string, 1)}}
	count := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		s.calls.Add(1)
		return h(ctx, req)
	}
	countStream := func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
		s.calls.Add(1)
		return h(srv, ss)
	}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(lim.Unary(), count),
		grpc.ChainStreamInterceptor(lim.Stream(), countStream))
	hs := health.NewServer()
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	healthpb.RegisterHealthServer(srv, hs)
	go func() { _ = srv.Serve(s.lis) }()
	tb.Cleanup(srv.Stop)
	return s
}

// dial returns a health client on a new connection that the server sees coming from
// addr (an "ip:port"; ignored unless the server was started with peers).
func (s *server) dial(tb testing.TB, addr string) healthpb.HealthClient {
	tb.Helper()
	cc, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(s.lis.dial))
	if err != nil {
		tb.Fatalf("grpc.NewClient: %v", err)
	}
	tb.Cleanup(func() { _ = cc.Close() })
	return healthpb.NewHealthClient(cc)
}

func (s *server) served() int64 { return s.calls.Load() }

// peerListener is a bufconn listener whose accepted connections report the address
// their client dialed as their remote address, so that one in-memory server sees
// several clients.
type peerListener struct {
	*bufconn.Listener
	peers bool
	mu    sync.Mutex  // one dial at a time, so next holds the address of the dial in flight
	next  chan string // the address of the dial Accept is about to receive
}

func (l *peerListener) dial(ctx context.Context, addr string) (net.Conn, error) {
	if !l.peers {
		return l.DialContext(ctx)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next <- addr
	c, err := l.DialContext(ctx)
	if err != nil {
		<-l.next
	}
	return c, err
}

func (l *peerListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil || !l.peers {
		return c, err
	}
	addr, err := net.ResolveTCPAddr("tcp", <-l.next)
	if err != nil {
		_ = c.Close()
		return nil, err
	}
	return &peerConn{Conn: c, remote: addr}, nil
}

type peerConn struct {
	net.Conn
	remote net.Addr
}

func (c *peerConn) RemoteAddr() net.Addr { return c.remote }

// check calls Health.Check with the metadata pairs md and returns its error.
func check(tb testing.TB, c healthpb.HealthClient, md ...string) error {
	tb.Helper()
	ctx := metadataContext(tb, md...)
	_, err := c.Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

// watch opens Health.Watch with the metadata pairs md, reads its first message and
// closes it; it returns the error of the first read.
func watch(tb testing.TB, c healthpb.HealthClient, md ...string) error {
	tb.Helper()
	ctx, cancel := context.WithCancel(metadataContext(tb, md...))
	defer cancel()
	stream, err := c.Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		return err
	}
	_, err = stream.Recv()
	return err
}

func metadataContext(tb testing.TB, md ...string) context.Context {
	ctx := tb.Context()
	if len(md) > 0 {
		ctx = metadataAppend(ctx, md...)
	}
	return ctx
}

// outcome is what a test checks of a call's result: its code and, for a denial, the
// RetryInfo delay (-1 when there is no RetryInfo).
type outcome struct {
	code  codes.Code
	retry time.Duration
}

func (o outcome) String() string { return fmt.Sprintf("%v retry=%v", o.code, o.retry) }

func outcomeOf(err error) outcome {
	st := status.Convert(err)
	o := outcome{code: st.Code(), retry: -1}
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			o.retry = ri.GetRetryDelay().AsDuration()
		}
	}
	return o
}

// ok is the outcome of a served call.
var ok = outcome{codes.OK, -1}

func want(tb testing.TB, label string, err error, w outcome) {
	tb.Helper()
	if got := outcomeOf(err); got != w {
		tb.Errorf("%s: got %v (%v), want %v", label, got, err, w)
	}
}

// failingStore is a store.Store whose backend is down: every call fails with an error
// wrapping store.ErrUnavailable.
type failingStore struct{ calls atomic.Int64 }

var _ store.Store = (*failingStore)(nil)

func (s *failingStore) Apply(context.Context, string, algo.Algorithm, algo.Request) (algo.Decision, error) {
	s.calls.Add(1)
	return algo.Decision{}, fmt.Errorf("%w: connection refused", store.ErrUnavailable)
}

func (s *failingStore) Refund(context.Context, string, algo.Algorithm, int64, int64) error {
	return fmt.Errorf("%w: connection refused", store.ErrUnavailable)
}

func (s *failingStore) Close() error { return nil }

// metadataAppend adds the pairs kv to ctx's outgoing metadata.
func metadataAppend(ctx context.Context, kv ...string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, kv...)
}
