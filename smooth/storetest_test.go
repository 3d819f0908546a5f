package smooth_test

import (
	"fmt"
	"strings"
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
		storetest.DiffOptions{Steps: 1500, Seed: 11, Algorithms: smoothSamples()})
}

// smoothSamples are algo.Samples' configs of this package's two algorithms.
func smoothSamples() []algo.Algorithm {
	var out []algo.Algorithm
	for _, a := range algo.Samples() {
		if strings.HasPrefix(a.Name(), "smooth-") {
			out = append(out, a)
		}
	}
	return out
}
