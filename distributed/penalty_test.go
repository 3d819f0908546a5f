package distributed_test

import (
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/store/storetest"
)

// penaltyAlgorithms wrap rules of every rate algorithm, with fixed and growing blocks.
func penaltyAlgorithms() []algo.Algorithm {
	return []algo.Algorithm{
		algo.Penalty{Rule: algo.FixedWindow{Limit: 3, Window: time.Second}, Block: 2 * time.Second},
		algo.Penalty{Rule: algo.SlidingWindowLog{Limit: 2, Window: 10 * time.Millisecond}, Block: 15 * time.Millisecond,
			Growth: 2, MaxBlock: 200 * time.Millisecond},
		algo.Penalty{Rule: algo.SlidingWindowCounter{Limit: 10, Window: time.Second}, Block: 700 * time.Millisecond,
			Growth: 1.7, MaxBlock: 10 * time.Second},
		algo.Penalty{Rule: algo.TokenBucket{Rate: 1e6 / 7, Burst: 3}, Block: 29 * time.Microsecond, Growth: 3, MaxBlock: time.Millisecond},
		algo.Penalty{Rule: algo.LeakyBucket{Rate: 10, Capacity: 5}, Block: 333 * time.Millisecond},
		algo.Penalty{Rule: algo.GCRA{Rate: 3, Burst: 2}, Block: time.Second, Growth: 1.5, MaxBlock: 4 * time.Second},
		algo.Named(algo.Penalty{Rule: algo.TokenBucket{Rate: 10, Burst: 5}, Block: 250 * time.Millisecond, Growth: 2,
			MaxBlock: 3 * time.Second}, "abuse"),
	}
}

// TestPenaltyDifferential: the local store and Redis make the same decisions for Penalty
// rules through the conformance suite's differential driver (refunds, MaxWait, clocks
// going back, Peek and Reset included).
func TestPenaltyDifferential(t *testing.T) {
	t.Parallel()
	c := redistest.WithoutExpiry(redistest.Start(t).Client(t)) // fake clocks against real TTLs
	storetest.Differential(t, localFactory, redisFactory(c), storetest.DiffOptions{
		Steps: 1500, Seed: 14, Algorithms: penaltyAlgorithms(), Admin: true,
	})
}
