package smooth_test

import (
	"fmt"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
	"github.com/ratekit/limiter/store/storetest"
)

// TestSmoothStoretestDifferential drives the local and the Redis store with storetest's
// random sequences (unusual keys with braces and NUL bytes, time going backwards, every
// kind of MaxWait, refunds) on the smooth algorithms: every decision must be identical.
func TestSmoothStoretestDifferential(t *testing.T) {
	t.Parallel()
	c := redisClient(t, true)
	var n atomic.Int64
	storetest.Differential(t,
		func(t *testing.T, clk *clockx.Fake) store.Store { return teststore.Local(t, local.WithClock(clk)) },
		func(t *testing.T, clk *clockx.Fake) store.Store {
			return teststore.Redis(t, c, distributed.WithClientClock(clk), distributed.WithTimeout(10*time.Second),
				distributed.WithPrefix(fmt.Sprintf("smooth-diff-%d:", n.Add(1))))
		},
		storetest.DiffOptions{Steps: 1500, Seed: 11, Algorithms: []algo.Algorithm{
			algo.SmoothBursty{Rate: 5},
			algo.SmoothBursty{Rate: 1.0 / 3, MaxBurstSeconds: 2.5},
			algo.SmoothBursty{Rate: 1e6 / 7},
			algo.SmoothBursty{Rate: math.Inf(1)},
			algo.SmoothWarmingUp{Rate: 2, Warmup: 4 * time.Second},
			algo.SmoothWarmingUp{Rate: 10, Warmup: 250 * time.Millisecond, ColdFactor: 10},
			algo.SmoothWarmingUp{Rate: 1e6 / 7, Warmup: time.Millisecond},
		}})
}
