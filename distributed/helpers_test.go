package distributed_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/teststore"
)

// epoch is where the fake clocks of these tests start: a realistic instant.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// prefixes hands out a fresh prefix to every store sharing one server, so parallel tests
// never see each other's state.
var prefixes atomic.Int64

func freshPrefix() string { return fmt.Sprintf("t%d:", prefixes.Add(1)) }

// testTimeout is the store timeout of tests that are not about timeouts: generous, since
// a loaded machine running -race (and a Cluster's redirections) can take longer than the
// production default.
const testTimeout = 10 * time.Second

// newStore returns a store on client with a fresh prefix and testTimeout (unless opts set
// another), closed when t ends.
func newStore(t testing.TB, client redis.UniversalClient, opts ...distributed.Option) *distributed.Store {
	t.Helper()
	s := teststore.Redis(t, client, append([]distributed.Option{distributed.WithPrefix(freshPrefix()),
		distributed.WithTimeout(testTimeout)}, opts...)...)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// counter is a test-only algorithm with a Lua twin: at most Limit permits until the key
// expires (one minute after its last write). It keeps two keys, the count and the instant
// of the last grant, so tests can check that both share a Cluster slot. It lets the store's
// plumbing be tested independently of the real algorithms' scripts.
type counter struct{ Limit int64 }

var counterScript = &algo.Script{
	Name: "test-counter",
	Keys: []string{"", ":last"},
	Source: `
local now
if ARGV[2] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[2])
end
local n, limit = tonumber(ARGV[3]), tonumber(ARGV[5])
local c = tonumber(redis.call('GET', KEYS[1]) or '0')
if ARGV[1] == 'refund' then
  c = c - n
  if c <= 0 then redis.call('DEL', KEYS[1], KEYS[2]) else redis.call('SET', KEYS[1], c, 'KEEPTTL') end
  return 0
end
if c + n > limit then return {0, limit, limit - c, 1000000000000000, 60000000, 0, 0} end
redis.call('SET', KEYS[1], c + n, 'PX', 60000)
redis.call('SET', KEYS[2], now, 'PX', 60000)
return {1, limit, limit - c - n, 0, 60000000, 0, now}
`,
}

type counterState struct{ n int64 }

func (counter) Name() string { return "test-counter" }
func (counter) Slot() string { return "ctr" }
func (c counter) Validate() error {
	if c.Limit < 1 {
		return fmt.Errorf("%w: counter.Limit must be ≥ 1", algo.ErrInvalidConfig)
	}
	return nil
}
func (counter) NewState() algo.State { return &counterState{} }
func (c counter) Apply(st algo.State, now int64, req algo.Request) algo.Decision {
	s := st.(*counterState)
	if s.n+req.N > c.Limit {
		return algo.Decision{Limit: c.Limit, Remaining: c.Limit - s.n, RetryAfter: algo.Never, ResetAfter: time.Minute}
	}
	s.n += req.N
	return algo.Decision{Allowed: true, Limit: c.Limit, Remaining: c.Limit - s.n, ResetAfter: time.Minute, At: now}
}
func (counter) Refund(st algo.State, _, n, _ int64) {
	s := st.(*counterState)
	s.n = max(0, s.n-n)
}
func (counter) Script() *algo.Script          { return counterScript }
func (c counter) AppendArgs(args []any) []any { return append(args, c.Limit) }

var _ algo.Scripted = counter{}

// junk is a test-only algorithm whose script replies Reply, a Lua expression, instead of
// following the calling convention.
type junk struct{ Reply string }

var junkScript = &algo.Script{
	Name: "test-junk",
	Keys: []string{""},
	Source: `
local replies = {
  short = function() return {1, 2, 3} end,
  long = function() return {1, 1, 1, 0, 0, 0, 0, 0} end,
  string = function() return 'junk' end,
  status = function() return redis.status_reply('OK') end,
  integer = function() return 42 end,
  nested = function() return {1, 1, 1, 0, 0, 0, {7}} end,
  text = function() return {1, 1, 1, 0, 0, 0, 'x'} end,
  allowed2 = function() return {2, 1, 1, 0, 0, 0, 0} end,
  negative = function() return {1, 1, -1, 0, 0, 0, 0} end,
  none = function() return nil end,
  error = function() return redis.error_reply('ERR boom') end,
  raise = function() error('raised') end,
}
return replies[ARGV[5]]()
`,
}

func (junk) Name() string                                        { return "test-junk" }
func (junk) Slot() string                                        { return "junk" }
func (junk) Validate() error                                     { return nil }
func (junk) NewState() algo.State                                { return nil }
func (junk) Apply(algo.State, int64, algo.Request) algo.Decision { return algo.Decision{} }
func (junk) Refund(algo.State, int64, int64, int64)              {}
func (junk) Script() *algo.Script                                { return junkScript }
func (j junk) AppendArgs(args []any) []any                       { return append(args, j.Reply) }

// plain is an algorithm without a Lua twin.
type plain struct{}

func (plain) Name() string                                        { return "test-plain" }
func (plain) Slot() string                                        { return "plain" }
func (plain) Validate() error                                     { return nil }
func (plain) NewState() algo.State                                { return nil }
func (plain) Apply(algo.State, int64, algo.Request) algo.Decision { return algo.Decision{} }
func (plain) Refund(algo.State, int64, int64, int64)              {}

// ctxTimeout returns a context bounded by d, cancelled when t ends.
func ctxTimeout(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// fakeClock returns a fake clock at epoch.
func fakeClock() *clockx.Fake { return clockx.NewFake(epoch) }
