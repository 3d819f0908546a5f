package smooth_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/smooth"
)

// Fake clocks against real TTLs: a store built with distributed.WithClientClock(fake) decides at
// the fake instants, but Redis expires keys in real time, and a SmoothWarmingUp key a few
// milliseconds from cold gets a TTL of a few milliseconds. The table tests therefore run on
// clients whose scripts cannot set a TTL (redistest.WithoutExpiry); a state kept past its
// ResetAfter decides like the fresh one that would replace it, up to the documented
// SmoothBursty exception, which these tests never reach (its TTLs are a minute longer than
// the tests).
// The TTLs themselves are checked by algo's Lua differential test.

// redisClient starts a throw-away redis-server (or skips, see redistest.Require) and
// returns a client to it; frozen makes its scripts unable to set TTLs.
func redisClient(t *testing.T, frozen bool) *redis.Client {
	t.Helper()
	c := redistest.Start(t).Client(t)
	if frozen {
		redistest.WithoutExpiry(c)
	}
	return c
}

var prefixes atomic.Int64

// redisStoreOption returns WithStore on a distributed store over c, on clk's time, with a
// prefix of its own.
func redisStoreOption(t *testing.T, c redis.UniversalClient, clk clockx.Clock) smooth.Option {
	t.Helper()
	s := teststore.Redis(t, c, distributed.WithClientClock(clk), distributed.WithTimeout(10*time.Second),
		distributed.WithPrefix(fmt.Sprintf("smooth-test-%d:", prefixes.Add(1))))
	t.Cleanup(func() { _ = s.Close() })
	return smooth.WithStore(s, "key")
}
