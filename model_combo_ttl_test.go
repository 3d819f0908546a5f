package limiter_test

import (
	"context"
	"time"

	"github.com/ratekit/limiter/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// WithClientClock and Redis's TTLs (issue 21, case 8). Redis expires a key on its own
// clock; a client clock that runs slower (here: stands still) can still be inside a state's
// life when Redis drops it, and a fresh state then grants again. The check must not depend
// on real time, so real time is emulated: the scripts' TTLs are recorded instead of set
// (ttlShadow, put in front of every script by redistest.ShadowScripts), kept on an
// emulated server clock that runs ahead of the client's by the cLag steps, and a key is
// deleted when that clock passes its TTL, as Redis would. The bound on the client's
// grants then shows whether a state can end before its life does.

// modelClientLag is how far the emulated server clock may run ahead of the client clock:
// the history (FixedWindow{10 per 1 s}, a client clock that does not move, 1.5 s
// of real time, 10 more granted). Whatever the fix (a padded TTL, a computed one, a bound
// that the store enforces by refusing the call), that history must not over-admit.
const modelClientLag = 1500 * time.Millisecond

// ttlScale is what the hooked scripts multiply their TTLs (ms) by, so that no real time
// in a test can reach them (2 ms × 2^20 is 35 min) while the value set is still read back
// exactly: PTTL = ms × 2^20 − elapsed, so ms = ⌈PTTL / 2^20⌉ while elapsed < 17 min.
const ttlScale = 1 << 20

// ttlShadow replaces redis.call, for the whole script, by one that scales the TTLs of
// PEXPIRE, EXPIRE and SET ... PX (the compact state's write) by ttlScale, and refuses the absolute forms, which the emulation does not
// model (a script that starts using them must be modelled here). The server has no FCALL
// (ttlRedis), so every script is an EVAL or EVALSHA that this shadow can prefix.
const ttlShadow = "local redis = setmetatable({call = function(cmd, ...) " +
	"local c = string.upper(cmd) " +
	"if c == 'PEXPIRE' or c == 'EXPIRE' then local a = {...} local ms = tonumber(a[2]) " +
	"if c == 'EXPIRE' then ms = ms * 1000 end " +
	"a[2] = string.format('%d', ms * 1048576) return redis.call('PEXPIRE', unpack(a)) end " +
	"if c == 'SET' then local a = {...} if a[3] == 'PX' then a[4] = string.format('%d', tonumber(a[4]) * 1048576) " +
	"elseif a[3] == 'EX' or a[3] == 'PXAT' or a[3] == 'EXAT' then error('model TTL: SET ' .. a[3] .. ' is not emulated (model_combo_ttl_test.go)') end " +
	"return redis.call('SET', unpack(a)) end " +
	"if c == 'PEXPIREAT' or c == 'EXPIREAT' or c == 'SETEX' or c == 'PSETEX' then " +
	"error('model TTL: ' .. c .. ' is not emulated (model_combo_ttl_test.go)') end " +
	"return redis.call(cmd, ...) end}, {__index = redis})\n"

// ttlRedis returns the client of the subtest's client-clock server: a server of its own
// (its scripts differ from the other clients' under the same SHA-1s), without FCALL, so
// that the store sends EVALSHA, which the hook rewrites.
func (e *comboEnv) ttlRedis() redis.UniversalClient {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.ttlClient == nil {
		srv := redistest.StartWithFlags(e.tb, "--rename-command", "FCALL", "")
		// Every script runs behind ttlShadow: EVAL's body, and EVALSHA of an original
		// pointed at its shadowed twin once known.
		e.ttlClient = redistest.ShadowScripts(srv.Client(e.tb), ttlShadow, "")
	}
	return e.ttlClient
}

// comboTTL is the emulated expiry of one world's keys.
type comboTTL struct {
	c      redis.UniversalClient
	prefix string
	dead   map[string]int64 // Redis key → the server instant (µs) its TTL ends
}

// expire deletes the keys whose TTL has ended by now (server µs), before a step.
func (t *comboTTL) expire(ctx context.Context, now int64) error {
	for k, at := range t.dead {
		if at <= now {
			if err := t.c.Del(ctx, k).Err(); err != nil {
				return err
			}
			delete(t.dead, k)
		}
	}
	return nil
}

// scan records, after a step, the TTL of every key the step wrote (a key with a TTL; the
// TTL is then removed, so the next scan tells a new write from an old one) and forgets the
// keys deleted.
func (t *comboTTL) scan(ctx context.Context, now int64) error {
	keys, err := t.c.Keys(ctx, t.prefix+"*").Result()
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	for _, k := range keys {
		seen[k] = true
		d, err := t.c.PTTL(ctx, k).Result()
		if err != nil {
			return err
		}
		if d <= 0 {
			continue // no TTL: not written by this step (or a key the test set)
		}
		ms := (d.Milliseconds() + ttlScale - 1) / ttlScale
		t.dead[k] = now + ms*1000
		if err := t.c.Persist(ctx, k).Err(); err != nil {
			return err
		}
	}
	for k := range t.dead {
		if !seen[k] {
			delete(t.dead, k)
		}
	}
	return nil
}
