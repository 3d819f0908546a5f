// Command client asks ratekitd once, as Envoy does, and prints the answer.
package main

import (
	"context"
	"fmt"
	"log"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func main() {
	conn, err := grpc.NewClient("localhost:8081", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	resp, err := rlsv3.NewRateLimitServiceClient(conn).ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{
		Domain: "edge",
		Descriptors: []*ratelimitv3.RateLimitDescriptor{{
			Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "10.0.0.1"}},
		}},
	})
	if err != nil {
		log.Fatal(err) // UNAVAILABLE when the store is down (--failure-policy error)
	}
	st := resp.Statuses[0]
	fmt.Println(resp.OverallCode, st.LimitRemaining, st.CurrentLimit.GetRequestsPerUnit(), st.CurrentLimit.GetUnit())
}
