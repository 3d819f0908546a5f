package distributed_test

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
)

// Several rules on one key are checked and taken in one script, atomically: here "100 per
// second AND 20 per 100 ms" on an API key. Rules of the same algorithm need distinct slots
// (algo.Named). Most programs use limiter.All, which calls ApplyAll for them.
func ExampleStore_ApplyAll() {
	client := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
	defer client.Close()
	s, err := distributed.New(client)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	rules := []algo.Algorithm{
		algo.TokenBucket{Rate: 100, Burst: 100},
		algo.Named(algo.TokenBucket{Rate: 200, Burst: 20}, "per100ms"),
	}
	ds, ok, err := s.ApplyAll(context.Background(), "api-key:7", rules, algo.Request{N: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ok, ds[0].Remaining, ds[1].Remaining)
}
