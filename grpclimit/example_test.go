package grpclimit_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
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
)

// Example limits a gRPC server by API key, two calls a second with bursts of two, and
// shows what a client reads from a denial. The store runs on a fake clock, so the
// output is the same on every run.
func Example() {
	clk := clockx.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	st, err := local.New(local.WithClock(clk))
	if err != nil {
		panic(err)
	}
	defer st.Close()
	l, err := limiter.New(st, algo.TokenBucket{Rate: 2, Burst: 2})
	if err != nil {
		panic(err)
	}
	key, err := grpclimit.ByMetadata("x-api-key")
	if err != nil {
		panic(err)
	}
	lim, err := grpclimit.New(l, grpclimit.WithKey(key))
	if err != nil {
		panic(err)
	}

	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(lim.Unary()),
		grpc.ChainStreamInterceptor(lim.Stream()))
	healthpb.RegisterHealthServer(srv, health.NewServer())
	lis := bufconn.Listen(1 << 16) // in memory; a real server listens on TCP
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	cc, err := grpc.NewClient("passthrough:///bufnet",
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }))
	if err != nil {
		panic(err)
	}
	defer cc.Close()
	client := healthpb.NewHealthClient(cc)

	ctx := metadata.AppendToOutgoingContext(context.Background(), "x-api-key", "alice")
	for i := 1; i <= 3; i++ {
		_, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
		st := status.Convert(err)
		fmt.Printf("call %d: %v", i, st.Code())
		for _, d := range st.Details() {
			if ri, ok := d.(*errdetails.RetryInfo); ok {
				fmt.Printf(", retry in %v", ri.GetRetryDelay().AsDuration())
			}
		}
		fmt.Println()
	}
	// Output:
	// call 1: OK
	// call 2: OK
	// call 3: ResourceExhausted, retry in 500ms
}
