package smooth_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/smooth"
)

// Fake clocks against real TTLs: a store built with distributed.WithClock(fake) decides at
// the fake instants, but Redis expires keys in real time, and a SmoothWarmingUp key a few
// milliseconds from cold gets a TTL of a few milliseconds. The table tests therefore run on
// clients whose scripts cannot set a TTL (frozenTTL); a state kept past its ResetAfter
// decides like the fresh one that would replace it, up to the documented SmoothBursty
// exception, which these tests never reach (its TTLs are a minute longer than the tests).
// The TTLs themselves are checked by algo's Lua differential test.

// frozenTTL is a go-redis hook that runs every script with PEXPIRE turned into a no-op:
// EVAL bodies get a prologue shadowing redis.call, and EVALSHA of an original script is
// pointed at its shadowed twin once the twin is known.
type frozenTTL struct {
	twins sync.Map // SHA-1 of a script → SHA-1 of its shadowed twin
}

const ttlShadow = "local redis = setmetatable({call = function(c, ...) " +
	"if c == 'PEXPIRE' then return 1 end return redis.call(c, ...) end}, {__index = redis})\n"

func (h *frozenTTL) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *frozenTTL) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.rewrite(cmd)
		return next(ctx, cmd)
	}
}

func (h *frozenTTL) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, c := range cmds {
			h.rewrite(c)
		}
		return next(ctx, cmds)
	}
}

func (h *frozenTTL) rewrite(cmd redis.Cmder) {
	args := cmd.Args()
	if len(args) < 2 {
		return
	}
	body, ok := args[1].(string)
	if !ok {
		return
	}
	switch strings.ToLower(cmd.Name()) {
	case "evalsha":
		if twin, ok := h.twins.Load(body); ok {
			args[1] = twin
		}
	case "eval":
		if !strings.HasPrefix(body, ttlShadow) {
			twin := ttlShadow + body
			h.twins.Store(redis.NewScript(body).Hash(), redis.NewScript(twin).Hash())
			args[1] = twin
		}
	}
}

// redisClient starts a throw-away redis-server (or skips, see redistest.Require) and
// returns a client to it; frozen makes its scripts unable to set TTLs.
func redisClient(t *testing.T, frozen bool) *redis.Client {
	t.Helper()
	c := redistest.Start(t).Client(t)
	if frozen {
		c.AddHook(&frozenTTL{})
	}
	return c
}

var prefixes atomic.Int64

// redisStoreOption returns WithStore on a distributed store over c, on clk's time, with a
// prefix of its own.
func redisStoreOption(t *testing.T, c redis.UniversalClient, clk clockx.Clock) smooth.Option {
	t.Helper()
	s := distributed.New(c, distributed.WithClock(clk),
		distributed.WithPrefix(fmt.Sprintf("smooth-test-%d:", prefixes.Add(1))))
	t.Cleanup(func() { _ = s.Close() })
	return smooth.WithStore(s, "key")
}
