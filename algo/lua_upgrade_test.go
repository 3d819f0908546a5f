package algo

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter/internal/redistest"
	"github.com/redis/go-redis/v9"
)

// The scripts of earlier versions kept each state in a hash (testdata/hashformat holds
// them). The current ones keep one packed string, still read a hash and rewrite it on
// their next write: a rolling upgrade (old and new clients on one Redis) neither resets a
// key nor counts it twice. These tests run the old scripts first, so that the keys are
// exactly what that version wrote, then the new ones, against the Go twin.

// hashFormatBodies names the old files of each algorithm's body, in order.
var hashFormatBodies = map[string][]string{
	FixedWindow{}.Name():          {"fixed_window.lua"},
	SlidingWindowCounter{}.Name(): {"sliding_window_counter.lua"},
	TokenBucket{}.Name():          {"token_bucket.lua"},
	GCRA{}.Name():                 {"gcra.lua"},
	LeakyBucket{}.Name():          {"leaky_bucket.lua"},
	SmoothBursty{}.Name():         {"smooth.lua", "smooth_bursty.lua"},
	SmoothWarmingUp{}.Name():      {"smooth.lua", "smooth_warming_up.lua"},
}

func hashFormatFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "hashformat", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hashFormatSource is the EVAL source the old version built for algorithm name, as
// newScript built it then.
func hashFormatSource(t *testing.T, name string) string {
	t.Helper()
	var parts []string
	for _, f := range hashFormatBodies[name] {
		parts = append(parts, hashFormatFile(t, f))
	}
	body := strings.Join(parts, "\n")
	// That version ran a peek as a copy of the body made a function of n, before the body.
	peek := "if is_peek then\nlocal function decide(n)\n" + body +
		"\nend\nreturn peeked(decide(n), decide(MAX_EXACT + 2))\nend\n"
	return hashFormatFile(t, "base.lua") + hashFormatFile(t, "prelude.lua") + "\n" + peek + body
}

// TestLuaUpgradeFromHashes drives every rate twin on one key with random applies, refunds
// and peeks: the old script until a random step, the new one after, checking every
// decision and the stored state against the Go twin, that peeks leave an old key as it
// was, and that the first write of the new script turns the hash into a packed string.
func TestLuaUpgradeFromHashes(t *testing.T) {
	t.Parallel()
	rdb := redistest.WithoutExpiry(newRedisClient(t, startRedis(t), 3)) // fake instants
	ctx := context.Background()
	twins := append([]luaTwin{smoothTwin(false), smoothTwin(true)}, luaTwins...)
	for _, tw := range twins {
		if _, ok := hashFormatBodies[tw.name]; !ok {
			continue // the sliding log keeps its list and hash
		}
		t.Run(tw.name, func(t *testing.T) {
			t.Parallel()
			oldScript := redis.NewScript(hashFormatSource(t, tw.name))
			converted, peeksOnHash := 0, 0
			for seed := int64(0); seed < 40; seed++ {
				r := rand.New(rand.NewSource(seed))
				fam := tw.family(r)
				key := fmt.Sprintf("{upgrade}:%s:%d", tw.name, seed)
				st := fam[0].NewState()
				now := int64(1_700_000_000_000_000) + r.Int63n(1e12)
				switchAt := 1 + r.Intn(30)
				var lastAt int64
				sawHash := false
				for i := 0; i < 40; i++ {
					a := fam[r.Intn(len(fam))]
					rs := redis.NewScript(a.Script().Source)
					if i < switchAt {
						rs = oldScript
					}
					scale := tw.scale(a)
					now += r.Int63n(scale/3 + 1)
					typ := rdb.Type(ctx, key).Val()
					before, err := readState(ctx, rdb, key)
					if err != nil {
						t.Fatalf("seed %d step %d: %v", seed, i, err)
					}
					fail := func(format string, args ...any) {
						t.Helper()
						t.Fatalf("seed %d step %d (%v, new script %v, key %s %v): %s", seed, i, a, i >= switchAt, typ, before, fmt.Sprintf(format, args...))
					}
					req := Request{N: 1 + r.Int63n(min(tw.limit(a), 4)), MaxWait: time.Duration(r.Int63n(2)*r.Int63n(scale+1)) * time.Microsecond}
					var write bool
					switch k := r.Intn(8); {
					case k == 0 && lastAt != 0: // refund
						a.Refund(st, now, 1, lastAt)
						if err := rs.Run(ctx, rdb, []string{key}, refundArgs(a, now, 1, lastAt)...).Err(); err != nil {
							fail("refund: %v", err)
						}
						write = true
					case k == 1 && i >= switchAt: // a peek writes nothing, whatever the format
						v, err := rs.Run(ctx, rdb, []string{key}, PeekArgs(nil, now, req, a.AppendArgs(nil))...).Result()
						if err != nil {
							fail("peek: %v", err)
						}
						if want, ok := Peek(a, cloneState(st), now, req); ok {
							if got, err := decisionOf(v); err != nil || got != want {
								fail("peek: Lua %v (%+v, %v), Go %+v", v, got, err, want)
							}
						}
						after, _ := readState(ctx, rdb, key)
						if !reflect.DeepEqual(after, before) || rdb.Type(ctx, key).Val() != typ {
							fail("the peek wrote %v", after)
						}
						if typ == "hash" {
							peeksOnHash++
						}
						continue
					default:
						want := a.Apply(st, now, req)
						v, err := rs.Run(ctx, rdb, []string{key}, applyArgs(a, now, req)...).Result()
						if err != nil {
							fail("apply: %v", err)
						}
						if got, err := decisionOf(v); err != nil || got != want {
							fail("apply %+v: Lua %v (%+v, %v), Go %+v", req, v, got, err, want)
						}
						if want.Allowed {
							lastAt, write = want.At, true
						}
					}
					h, err := readState(ctx, rdb, key)
					if err != nil {
						fail("%v", err)
					}
					stored, err := tw.stored(h, nil)
					if want := tw.snap(st); err != nil || stored != want && !(len(h) == 0 && tw.reset(a, st, now) <= 0) {
						fail("stored %v = %+v (%v), Go state %+v", h, stored, err, want)
					}
					after := rdb.Type(ctx, key).Val()
					if i < switchAt && after == "string" {
						fail("the old script wrote a string")
					}
					sawHash = sawHash || after == "hash"
					if i >= switchAt && typ == "hash" && write && !reflect.DeepEqual(h, before) {
						if after == "hash" { // a string, or none for a state fresh again
							fail("the new script's write left a hash")
						}
						converted++
					}
				}
				if !sawHash {
					t.Errorf("seed %d: the old script never wrote the key", seed)
				}
				rdb.Del(ctx, key)
			}
			if converted < 10 || peeksOnHash == 0 {
				t.Errorf("%d old keys rewritten by the new script, %d peeks on an old key: too few", converted, peeksOnHash)
			}
		})
	}
}

// TestLuaUpgradePenaltyFromHash: a Penalty's key written by the old script (a hash) still
// blocks under the new one, with the Go twin's decisions, and the next offence rewrites it.
func TestLuaUpgradePenaltyFromHash(t *testing.T) {
	t.Parallel()
	rdb := redistest.WithoutExpiry(newRedisClient(t, startRedis(t), 3))
	ctx := context.Background()
	p := Penalty{Rule: FixedWindow{Limit: 2, Window: time.Second}, Block: 300 * time.Millisecond,
		MaxBlock: 10 * time.Second, Growth: 2}
	rule := hashFormatSource(t, FixedWindow{}.Name())
	oldSrc := "local function inner(KEYS, ARGV)\n" + rule + "\nend\n" + hashFormatFile(t, "base.lua") + hashFormatFile(t, "penalty.lua")
	keys := scriptKeys(p.Script(), "{upgrade}:penalty")
	pkey := keys[len(keys)-1]
	st := p.NewState()
	now := int64(1_700_000_000_000_000)
	types := map[string]bool{}
	for i := 0; i < 60; i++ {
		rs := redis.NewScript(p.Script().Source)
		if i < 20 {
			rs = redis.NewScript(oldSrc)
		}
		now += 97_000
		req := Request{N: 1}
		want := p.Apply(st, now, req)
		v, err := rs.Run(ctx, rdb, keys, ApplyArgs(nil, now, req, p.AppendArgs(nil))...).Result()
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got, err := decisionOf(v); err != nil || got != want {
			t.Fatalf("step %d: Lua %v (%+v, %v), Go %+v", i, v, got, err, want)
		}
		typ := rdb.Type(ctx, pkey).Val()
		types[fmt.Sprintf("%v %s", i >= 20, typ)] = true
		h, err := readState(ctx, rdb, pkey)
		ps := st.(*penaltyState)
		if err != nil || ps.block > 0 && (h["until"] != fmt.Sprint(ps.until) || h["block"] != fmt.Sprint(ps.block)) {
			t.Fatalf("step %d: penalty key %v (%v), Go until %d block %d", i, h, err, ps.until, ps.block)
		}
	}
	// old script: a hash; new script: the hash read (blocked) and then a string
	for _, k := range []string{"false hash", "true hash", "true string"} {
		if !types[k] {
			t.Errorf("never saw (new script, key type) = %s: %v", k, types)
		}
	}
}

// TestLuaForeignString: a state key holding a string that is not the algorithm's state (an
// application's value, another algorithm's packed state, or a string with the state's tag
// and length that does not end as every state does: issue 35) fails with WRONGTYPE, as a
// key of another type does, and is left as it was.
func TestLuaForeignString(t *testing.T) {
	t.Parallel()
	rdb := newRedisClient(t, startRedis(t), 3)
	ctx := context.Background()
	const now = 1_700_000_000_000_000
	for _, c := range []struct {
		a   Scripted
		own string // the algorithm's own tag and length, without the end of a state
	}{
		{FixedWindow{Limit: 3, Window: time.Second}, rawState('F', 1, 2)},
		{TokenBucket{Rate: 1, Burst: 3}, rawState('T', 1, 2, 3, 0, 1)},
		{GCRA{Rate: 1, Burst: 3}, rawState('G', 1, 2, 3, 0, 5, 3)},
		{SmoothBursty{Rate: 1}, rawState('B', 1, 2, 3, 4)},
		{LeakyBucket{Rate: 1, Capacity: 3}, rawState('L', 1, 2, 3, 4)},
		{SlidingWindowCounter{Limit: 3, Window: time.Second}, rawState('C', 1, 2, 3)},
		{SmoothWarmingUp{Rate: 1, Warmup: time.Second}, rawState('W', 1, 2, 3, 4, 5)},
		{TokenBucket{Rate: 1, Burst: 3}, rawState('T', 1, 2, 3, 0, 1) + "\x00rk\x02"}, // a later version
	} {
		a := c.a
		foreign := []string{"x", packState('F', 1, 2, 3), c.own} // 'F' with a field too many
		if c.own[0] != 'L' {
			foreign = append(foreign, packState('L', 1, 2, 3, 4)) // another algorithm's state
		}
		for _, v := range foreign {
			key := "{foreign}:" + a.Name()
			rdb.Set(ctx, key, v, 0)
			err := redis.NewScript(a.Script().Source).Run(ctx, rdb, []string{key}, applyArgs(a, now, Request{N: 1})...).Err()
			if err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
				t.Errorf("%v on the string %q: %v, want WRONGTYPE", a, v, err)
			}
			if got := rdb.Get(ctx, key).Val(); got != v {
				t.Errorf("%v rewrote the string %q: %q", a, v, got)
			}
		}
	}
}

// TestLuaKeptTTL: at the server's TIME, a grant in a window that already holds grants
// keeps the key's TTL (SET KEEPTTL, base.lua's put_state_kept), since it already ends
// when the state is fresh; a client clock's grant sets it (PX). To see which was done the
// test moves the TTL far out between the calls.
func TestLuaKeptTTL(t *testing.T) {
	t.Parallel()
	rdb := newRedisClient(t, startRedis(t), 3)
	ctx := context.Background()
	if v, _ := rdb.Info(ctx, "server").Result(); !strings.Contains(v, "redis_version:7") && !strings.Contains(v, "redis_version:8") {
		t.Skip("KEEPTTL is used from Redis 7 on")
	}
	for _, a := range []Scripted{FixedWindow{Limit: 100, Window: 10 * time.Second}, SlidingWindowCounter{Limit: 100, Window: 10 * time.Second}} {
		key := "{kept}:" + a.Name()
		rs := redis.NewScript(a.Script().Source)
		st := a.NewState()
		apply := func(now int64) Decision {
			t.Helper()
			v, err := rs.Run(ctx, rdb, []string{key}, applyArgs(a, now, Request{N: 1})...).Result()
			d, err2 := decisionOf(v)
			if err != nil || err2 != nil || !d.Allowed {
				t.Fatalf("%v: %v, %v, %+v", a, err, err2, d)
			}
			if want := a.Apply(st, d.At, Request{N: 1}); now == ServerTime && want != d {
				t.Fatalf("%v: Lua %+v, Go %+v", a, d, want)
			}
			return d
		}
		for try := 0; ; try++ {
			rdb.Del(ctx, key)
			st = a.NewState()
			d1 := apply(ServerTime)
			if ttl := rdb.PTTL(ctx, key).Val(); ttl > 20*time.Second || ttl <= 0 {
				t.Fatalf("%v: the first grant set PTTL %v, want at most two windows", a, ttl)
			}
			rdb.PExpire(ctx, key, time.Hour)
			d2 := apply(ServerTime)
			if d2.At/10_000_000 != d1.At/10_000_000 && try < 3 {
				continue // a window ended between the calls
			}
			if ttl := rdb.PTTL(ctx, key).Val(); ttl < 59*time.Minute {
				t.Errorf("%v: a second grant in the window at the server's time set PTTL %v, want it kept", a, ttl)
			}
			if h, _ := readState(ctx, rdb, key); h["count"] != "2" && h["curr"] != "2" {
				t.Errorf("%v: state %v after two grants", a, h)
			}
			apply(d2.At + 1) // a client clock
			if ttl := rdb.PTTL(ctx, key).Val(); ttl > 30*time.Second {
				t.Errorf("%v: a grant at a client's time kept PTTL %v, want it set", a, ttl)
			}
			break
		}
	}
}
