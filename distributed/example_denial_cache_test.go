package distributed_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
)

// A key hammered far beyond its limit costs Redis about two scripts per refill instead of
// one per request: once Redis denies a request, the store answers the same request itself
// until the denial's RetryAfter has passed. This example needs a Redis on localhost:6379,
// so it is compiled but not run by go test.
func ExampleWithDenialCache() {
	client := redis.NewClient(&redis.Options{Addr: "localhost:6379", ContextTimeoutEnabled: true})
	defer client.Close()
	s, err := distributed.New(client, distributed.WithDenialCache(distributed.DenialCache{
		MaxEntries: 100_000,     // (key, slot) pairs remembered
		MaxAge:     time.Second, // a refund elsewhere is noticed within a second at worst
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	rule := algo.FixedWindow{Limit: 100, Window: time.Minute}
	for i := 0; i < 1000; i++ {
		// After the 100th, Redis sees one denial; the other 899 are answered locally.
		_, _ = s.Apply(context.Background(), "abuser", rule, algo.Request{N: 1})
	}
}
