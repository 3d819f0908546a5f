package distributed

import (
	"context"
	"fmt"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/luawire"
	"github.com/ratekit/limiter/internal/resetmark"
	"github.com/ratekit/limiter/internal/storecheck"
	"github.com/ratekit/limiter/store"
)

var _ store.Admin = (*Store)(nil)

// markSuffix names the key of a state's reset mark (see resetLua).
var markSuffix = []string{resetmark.Suffix}

// Peek answers what Apply(ctx, key, a, req) would answer now (with what is available
// before the request as Remaining, see algo.Peek), in one round trip, without
// writing anything: the algorithm's script runs in its "peek" mode (see algo.Script), which
// reads the state, decides, and skips every write, so no key is created and no TTL moves.
// Its errors are those of Apply; an algorithm of another package whose script does not
// know "peek" fails as its script does. See store.Admin.
func (s *Store) Peek(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	if err := s.check(ctx, key, a, req); err != nil {
		return algo.Decision{}, err
	}
	return s.decide(ctx, "peek", "peek", key, a, req, luawire.Peek)
}

// resetLua deletes the state keys it is given and marks each rule's state (see package
// internal/resetmark): KEYS holds the state keys of every rule, then one mark key per
// rule (its state key followed by resetmark.Suffix); ARGV[1] is the time argument of the
// algorithms' scripts, ARGV[1 + i] the span in µs of rule i's mark. A mark (get_mark of
// the base) is kept as long as it lasts; a second Reset keeps the later of each instant. All the keys carry the key's hash tag, so on a
// Cluster they live in one slot and one call handles them at once.
//
// Like every script of the module, it is the base and its own code, ending with
// `return serve(call)` (luawire.Composed).
var resetLua = luawire.BaseLua + "-- limiter reset\n" + `
local function call()
local now = read_now(ARGV[1])
local rules = #ARGV - 1
local states = #KEYS - rules
for i = 1, rules do
  local k = KEYS[states + i]
  local at, untl = now, now + tonumber(ARGV[1 + i])
  local oat, ountl = get_mark(k)
  if oat then
    if oat > at then at = oat end
    if ountl > untl then untl = ountl end
  end
  redis.call('SET', k, spack('<Bdd', 82, at, untl), 'PX', ttl_ms(untl - now))
end
return redis.call('DEL', unpack(KEYS, 1, states))
end
return serve(call)
`

// resetEntry runs resetLua through the transport like an algorithm's script (FCALL,
// batching, recovery of a lost script, WAIT under WithReplicaAck); its def is never
// handed to an algorithm.
var resetEntry = newEntry(&algo.Script{Name: "reset", Source: resetLua, Keys: []string{""}}, formLibrary)

// Reset deletes, in one round trip, every Redis key of key's state under each of rules:
// for each rule, its state key <prefix>{<key>}:<slot> and the keys its script names beside
// it (algo.Script.Keys), and leaves a mark beside the state key, <prefix>{<key>}:<slot>!reset,
// that the refunds of every script of package algo read (algo/prelude.lua): while it lasts
// (its TTL), a Refund of a grant acting before the Reset is dropped. A script of another
// package reads no mark, so its refunds behave as before. Its errors are those of Apply.
// See store.Admin.
func (s *Store) Reset(ctx context.Context, key string, rules ...algo.Algorithm) error {
	if err := storecheck.Reset(key, rules); err != nil {
		return err
	}
	if s.closed.Load() {
		return store.ErrClosed
	}
	if err := storecheck.Context(ctx); err != nil {
		return err
	}
	if s.denials != nil { // see denial_cache.go
		for _, a := range rules {
			s.denials.forget(key, a.Slot())
			defer s.denials.forget(key, a.Slot())
		}
	}
	b := getBuf()
	for _, a := range rules {
		_, e, slot, err := s.script(a)
		if err != nil {
			putBuf(b)
			return err
		}
		b.keys = appendStateKeys(b.keys, s.prefix, key, slot, e.def.Keys)
	}
	_, nowArg, err := s.now(true)
	if err != nil {
		putBuf(b)
		return err
	}
	b.args = append(b.args, nowArg)
	for _, a := range rules {
		b.keys = appendStateKeys(b.keys, s.prefix, key, a.Slot(), markSuffix)
		b.args = append(b.args, resetmark.Span(a))
	}
	reply, err := s.exec(ctx, resetEntry, b.keys, b.args)
	defer putBuf(b)
	if err != nil {
		return s.fail(ctx, "reset", key, b.keys, rules[0], err)
	}
	if _, ok := reply.(int64); !ok {
		return badReply(fmt.Sprintf("reset on key %s", quoteKey(key)), &luawire.ReplyError{Reply: reply, Problem: "want an integer"})
	}
	return nil
}
