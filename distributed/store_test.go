package distributed_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
	"github.com/ratekit/limiter/store/storetest"
)

// redisFactory makes stores on one shared client, isolated by a fresh prefix each.
func redisFactory(c redis.UniversalClient) storetest.Factory {
	return func(t *testing.T, clk *clockx.Fake) store.Store {
		return teststore.Redis(t, c, distributed.WithPrefix(freshPrefix()), distributed.WithClientClock(clk),
			distributed.WithTimeout(testTimeout))
	}
}

// evalFactory is redisFactory on the EVALSHA path that a server without functions (Redis
// before 7) gets.
func evalFactory(c redis.UniversalClient) storetest.Factory {
	return func(t *testing.T, clk *clockx.Fake) store.Store {
		return teststore.Redis(t, c, distributed.WithPrefix(freshPrefix()), distributed.WithClientClock(clk),
			distributed.WithTimeout(testTimeout), distributed.WithEvalOnly())
	}
}

func localFactory(t *testing.T, clk *clockx.Fake) store.Store {
	return teststore.Local(t, local.WithClock(clk))
}

// diffAlgorithms are the configs driven for the long differential runs: one per algorithm,
// each with a rate or window whose arithmetic is not round.
func diffAlgorithms() []algo.Algorithm {
	return []algo.Algorithm{
		algo.FixedWindow{Limit: 7, Window: 3 * time.Millisecond},
		algo.SlidingWindowLog{Limit: 5, Window: 7 * time.Millisecond},
		algo.SlidingWindowCounter{Limit: 9, Window: 11 * time.Millisecond},
		algo.TokenBucket{Rate: 1e6 / 7, Burst: 3},
		algo.LeakyBucket{Rate: 333.3, Capacity: 4},
		algo.GCRA{Rate: 1e3 / 3, Burst: 5},
	}
}

// diffSteps is the length of the long differential runs, per algorithm.
const diffSteps = 10_000

func TestSingleNode(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := redistest.WithoutExpiry(srv.Client(t)) // fake clocks against real TTLs
	t.Run("Conformance", func(t *testing.T) {
		t.Parallel()
		storetest.Run(t, redisFactory(c))
	})
	t.Run("DifferentialLong", func(t *testing.T) {
		t.Parallel()
		storetest.Differential(t, localFactory, redisFactory(c), storetest.DiffOptions{
			Steps: diffSteps, Seed: 20260101, Algorithms: diffAlgorithms(),
		})
	})
	t.Run("DifferentialEveryConfig", func(t *testing.T) {
		t.Parallel()
		storetest.Differential(t, localFactory, redisFactory(c), storetest.DiffOptions{Steps: 500, Seed: 7})
	})
	// The same scripts with EVALSHA instead of FCALL: the transport's contracts (bad input,
	// keys, independence, concurrency, Close, context, ApplyAll) run whole; its decisions
	// are checked by DifferentialEval against the local store, step by step, rather than by
	// the scenario tables, properties and probes a second time (the scripts are the same
	// text, run by another command; algo's TestLuaDifferential runs them by EVAL too).
	t.Run("ConformanceEval", func(t *testing.T) {
		t.Parallel()
		storetest.RunContracts(t, evalFactory(c))
	})
	t.Run("DifferentialEval", func(t *testing.T) {
		t.Parallel()
		storetest.Differential(t, localFactory, evalFactory(c), storetest.DiffOptions{
			Steps: 1000, Seed: 11, Algorithms: diffAlgorithms(),
		})
	})
}

func TestCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	c := redistest.WithoutExpiry(cl.Client(t)) // fake clocks against real TTLs
	t.Run("Conformance", func(t *testing.T) {
		t.Parallel()
		storetest.Run(t, redisFactory(c))
	})
	t.Run("Differential", func(t *testing.T) {
		t.Parallel()
		storetest.Differential(t, localFactory, redisFactory(c), storetest.DiffOptions{
			Steps: 1000, Seed: 3, Algorithms: diffAlgorithms(),
		})
	})
}
