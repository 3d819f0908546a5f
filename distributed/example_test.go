package distributed_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
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

	s, err := distributed.New(client, distributed.WithPrefix("myapp:"), distributed.WithTimeout(200*time.Millisecond))
	if err != nil {
		fmt.Println(err)
		return
	}
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
	s, err := distributed.New(client)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	rule := algo.SlidingWindowLog{Limit: 100, Window: time.Minute}
	d, err := s.Apply(context.Background(), "api-key:{weird}", rule, algo.Request{N: 1})
	fmt.Println(d.Allowed, err)
}

// Many goroutines deciding at once share round trips with WithBatching: their EVALSHA
// commands travel together as pipelines, each script still atomic and each caller still
// getting its own Decision. A call made while the store is idle is sent at once, so
// batching adds no latency to a lone caller. Like the examples above, it needs a Redis on
// localhost:6379, so it is compiled but not run by go test.
func ExampleWithBatching() {
	client := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
	defer client.Close()
	// Batching is the default: this is distributed.New(client) spelled out.
	// Batching{Off: true} would send every call on its own round trip.
	s, err := distributed.New(client, distributed.WithBatching(distributed.Batching{
		MaxBatch:    64, // commands per pipeline at most (the default)
		MaxInFlight: 2,  // pipelines in flight at once, and flusher goroutines at most (the default)
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close() // answers every call already queued

	rule := algo.TokenBucket{Rate: 100, Burst: 100}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, err := s.Apply(context.Background(), "tenant:7", rule, algo.Request{N: 1})
			if err == nil && d.Allowed {
				admitted.Add(1)
			}
		}()
	}
	wg.Wait()
	fmt.Println("admitted", admitted.Load(), "of 200") // the burst of a fresh key, and what refilled meanwhile
}
