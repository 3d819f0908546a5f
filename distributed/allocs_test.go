package distributed_test

import (
	"context"
	"testing"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
)

// TestApplyAllocs bounds the garbage of a decision on the client, with the store's
// default timeout: plain, and batched on an idle store (a pipeline of one). Most of what
// is left is go-redis's (the command, the reply array, its connection check; a pipeline's
// error checks). redis_rate's Allow costs 19 allocations on the same client. Before the
// shared deadlines of deadline.go, plain cost 16 and batched 19.
func TestApplyAllocs(t *testing.T) {
	if distributed.RaceDetector {
		t.Skip("allocations differ under the race detector")
	}
	c := redistest.Start(t).Client(t)
	a := algo.TokenBucket{Rate: 100, Burst: 100}
	for name, tc := range map[string]struct {
		opts []distributed.Option
		max  float64
	}{
		"plain":   {nil, 11},
		"batched": {[]distributed.Option{distributed.WithBatching(distributed.Batching{})}, 14},
	} {
		t.Run(name, func(t *testing.T) {
			s := teststore.Redis(t, c, append([]distributed.Option{distributed.WithPrefix(freshPrefix())}, tc.opts...)...)
			defer s.Close()
			ctx := context.Background()
			apply := func() {
				if _, err := s.Apply(ctx, "k", a, algo.Request{N: 1}); err != nil {
					t.Fatal(err)
				}
			}
			apply() // loads the function
			if n := testing.AllocsPerRun(200, apply); n > tc.max {
				t.Errorf("%v allocations per Apply, want ≤ %v", n, tc.max)
			}
		})
	}
}
