package distributed_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/store"
)

// This example needs a Redis on localhost:6379, so it is compiled but not run by go test.
func Example() {
	client := redis.NewClient(&redis.Options{
		Addr:                  "localhost:6379",
		ContextTimeoutEnabled: true, // let the store's per-call timeout reach the socket
	})
	defer client.Close() // the store does not close the client

	s := distributed.New(client, distributed.WithPrefix("myapp:"), distributed.WithTimeout(200*time.Millisecond))
	defer s.Close()

	// At most 10 requests per second per user, bursts of 20, shared by every process.
	rule := algo.TokenBucket{Rate: 10, Burst: 20}
	d, err := s.Apply(context.Background(), "user:42", rule, algo.Request{N: 1})
	switch {
	case errors.Is(err, store.ErrUnavailable):
		fmt.Println("Redis unavailable: apply the failure policy:", err)
	case err != nil:
		fmt.Println("bad input:", err)
	case d.Allowed:
		fmt.Println("allowed; remaining", d.Remaining)
	default:
		fmt.Println("denied; retry after", d.RetryAfter)
	}
}

// A Redis Cluster needs nothing more than a cluster client: every key of one decision
// carries the user key as its hash tag, so each script touches a single slot.
func Example_cluster() {
	client := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                 []string{"node1:6379", "node2:6379", "node3:6379"},
		ContextTimeoutEnabled: true,
	})
	defer client.Close()
	s := distributed.New(client)
	defer s.Close()

	rule := algo.SlidingWindowLog{Limit: 100, Window: time.Minute}
	d, err := s.Apply(context.Background(), "api-key:{weird}", rule, algo.Request{N: 1})
	fmt.Println(d.Allowed, err)
}
