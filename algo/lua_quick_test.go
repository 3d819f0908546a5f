package algo

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/internal/luawire"
)

// quickTimeShadow shadows a library's redis.call (as farLibShadow does) so that a test
// drives the server's clock, which the quick and multi functions always read, and sees
// every TTL as the script set it: TIME reads the instant stored at the key quick:now; a
// TTL (PEXPIRE, SET ... PX) is recorded in the hash quick:ttl under its key instead of
// being set, so that no key expires in real time and two keys' TTLs compare exactly (SET
// ... KEEPTTL keeps the record, DEL drops it).
const quickTimeShadow = "local redis = {call = function(cmd, ...) " +
	"if cmd == 'TIME' then local us = tonumber(redis.call('GET', 'quick:now')); " +
	"return {string.format('%d', math.floor(us / 1000000)), string.format('%d', us % 1000000)} end " +
	"if cmd == 'PEXPIRE' then local k, ms = ...; redis.call('HSET', 'quick:ttl', k, ms); return 1 end " +
	"if cmd == 'SET' then local a = {...}; if a[3] == 'PX' then redis.call('HSET', 'quick:ttl', a[1], a[4]); return redis.call('SET', a[1], a[2]) end return redis.call(cmd, unpack(a)) end " +
	"if cmd == 'DEL' then for _, k in ipairs({...}) do redis.call('HDEL', 'quick:ttl', k) end return redis.call(cmd, ...) end " +
	"return redis.call(cmd, ...) end, pcall = function(...) return redis.pcall(...) end, " +
	"error_reply = function(...) return redis.error_reply(...) end, " +
	"register_function = redis.register_function}\n"

// TestQuickFunction: the quick function of every sample's library decides, stores and
// expires exactly as the full function called with "apply", the server's TIME, N = 1 and
// MaxWait 0, and its packed reply decodes to the same decision. Both run on their own key
// with the same history (grants, denials, larger requests, reservations and refunds sent
// to both through the full function), at instants the test sets (TIME is shadowed), which
// go back now and then.
func TestQuickFunction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := newRedisClient(t, startRedis(t), 3)
	forQuickSamples(t, rdb, func(t *testing.T, i int, sa Scripted, fn, quick string) {
		def := sa.Script()
		full, fast := scriptKeys(def, fmt.Sprintf("{q%d}full", i)), scriptKeys(def, fmt.Sprintf("{q%d}fast", i))
		// call runs one FCALL and returns its reply and each key's TTL as the scripts
		// last set it (see quickTimeShadow; "" for none).
		call := func(step int, name string, keys []string, args []any) (any, []string) {
			t.Helper()
			reply, err := rdb.FCall(ctx, name, keys, args...).Result()
			if err != nil {
				t.Fatalf("step %d: %s: %v", step, name, err)
			}
			return reply, quickTTLs(ctx, rdb, keys)
		}
		cfg := sa.AppendArgs(nil)
		r := rand.New(rand.NewSource(int64(i) + 1))
		now := int64(1_700_000_000_000_000)
		for step := 0; step < 400; step++ {
			switch x := r.Intn(20); { // µs: mostly small steps, some jumps, some back
			case x == 0:
				now += r.Int63n(3_000_000)
			case x == 1:
				now -= r.Int63n(50_000)
			default:
				now += r.Int63n(20_000)
			}
			if err := rdb.Set(ctx, "quick:now", now, 0).Err(); err != nil {
				t.Fatal(err)
			}
			if r.Intn(4) == 0 { // the same other call on both keys, through the full function
				var args []any
				if r.Intn(3) == 0 {
					args = luawire.Refund(nil, luawire.ServerTime, 1+r.Int63n(2), now-r.Int63n(100_000), cfg)
				} else {
					args = luawire.Apply(nil, luawire.ServerTime, 1+r.Int63n(3), toDuration(r.Int63n(200_000)), cfg)
				}
				call(step, fn, full, args)
				call(step, fn, fast, args)
				continue
			}
			want, tw := call(step, fn, full, luawire.Apply(nil, luawire.ServerTime, 1, 0, cfg))
			got, tg := call(step, quick, fast, cfg)
			if _, ok := got.(string); !ok {
				t.Fatalf("step %d: quick replied %#v, want a packed string", step, got)
			}
			dw, err := luawire.ParseDecision(want)
			if err != nil {
				t.Fatal(err)
			}
			dg, err := luawire.ParseDecision(got)
			if err != nil {
				t.Fatal(err)
			}
			if dg != dw {
				t.Fatalf("step %d at %d: quick %+v, full %+v", step, now, dg, dw)
			}
			for j := range full {
				if sw, sg := quickKeyState(ctx, rdb, full[j]), quickKeyState(ctx, rdb, fast[j]); !reflect.DeepEqual(sw, sg) || tw[j] != tg[j] {
					t.Fatalf("step %d: key %q holds %q (TTL %q ms), %q holds %q (TTL %q ms)", step, full[j], sw, tw[j], fast[j], sg, tg[j])
				}
			}
		}
	})
}

// forQuickSamples runs f as a subtest for every sample whose script follows the
// composition rule (luawire.Composed: the Redis store sends its quick function), with
// that script's library (luawire.RateLibrary, as the store builds it) loaded on rdb behind
// quickTimeShadow (fn: its full function).
func forQuickSamples(t *testing.T, rdb *redis.Client, f func(t *testing.T, i int, sa Scripted, fn, quick string)) {
	t.Helper()
	for i, a := range Samples() {
		sa, ok := a.(Scripted)
		if !ok || !luawire.Composed(sa.Script().Source) {
			continue
		}
		t.Run(fmt.Sprintf("%d-%s", i, a), func(t *testing.T) {
			def := sa.Script()
			fn, quick, _, lib := luawire.RateLibrary(quickTimeShadow+def.Source, len(def.Keys))
			if quick != fn+luawire.QuickSuffix {
				t.Fatalf("quick function %q, want %q", quick, fn+luawire.QuickSuffix)
			}
			if err := rdb.FunctionLoadReplace(context.Background(), lib).Err(); err != nil {
				t.Fatal(err)
			}
			f(t, i, sa, fn, quick)
		})
	}
}

// quickTTLs returns the TTL in ms the scripts last set on each key (see quickTimeShadow),
// "" for none.
func quickTTLs(ctx context.Context, rdb *redis.Client, keys []string) []string {
	out := make([]string, len(keys))
	for j, k := range keys {
		out[j] = rdb.HGet(ctx, "quick:ttl", k).Val()
	}
	return out
}

// quickKeyState is what a key holds, for comparing two keys: its type and value.
func quickKeyState(ctx context.Context, rdb *redis.Client, key string) []string {
	typ := rdb.Type(ctx, key).Val()
	out := []string{typ}
	switch typ {
	case "string":
		out = append(out, rdb.Get(ctx, key).Val())
	case "list":
		out = append(out, rdb.LRange(ctx, key, 0, -1).Val()...)
	case "hash":
		out = append(out, fmt.Sprint(rdb.HGetAll(ctx, key).Val()))
	}
	return out
}

// TestMultiFunction: the multi function of every sample's library, given several calls'
// keys (the same key more than once, sometimes), decides, stores and expires exactly as
// the quick function called for each key in turn at the same instant, and a call on a key
// holding something else fails alone (its error in the reply, the others decided).
func TestMultiFunction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := newRedisClient(t, startRedis(t), 3)
	forQuickSamples(t, rdb, func(t *testing.T, i int, sa Scripted, fn, quick string) {
		def := sa.Script()
		multi := fn + luawire.MultiSuffix
		keysOf := func(base string) []string { return scriptKeys(def, base) }
		const pool = 3
		var oneByOne, together [pool][]string
		for k := range pool {
			oneByOne[k] = keysOf(fmt.Sprintf("{m%d}one%d", i, k))
			together[k] = keysOf(fmt.Sprintf("{m%d}all%d", i, k))
		}
		// Keys of the wrong types: a list where a state is a string (or a hash, the
		// previous format), a string where the sliding log keeps its list, so that every
		// twin fails on them with WRONGTYPE.
		bad := keysOf(fmt.Sprintf("{m%d}bad", i))
		if err := rdb.RPush(ctx, bad[0], "x").Err(); err != nil {
			t.Fatal(err)
		}
		if len(bad) > 1 {
			if err := rdb.Set(ctx, bad[1], "x", 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		cfg := sa.AppendArgs(nil)
		// tx runs cmds in a pipeline and returns them with the TTLs of keys as the scripts
		// last set them (see quickTimeShadow).
		tx := func(keys []string, cmds func(p redis.Pipeliner) []*redis.Cmd) ([]*redis.Cmd, []string) {
			t.Helper()
			var runs []*redis.Cmd
			_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				runs = cmds(p)
				return nil
			})
			return runs, quickTTLs(ctx, rdb, keys)
		}
		r := rand.New(rand.NewSource(int64(i) + 7))
		now := int64(1_700_000_000_000_000)
		for step := 0; step < 150; step++ {
			now += r.Int63n(30_000) - 2_000
			if err := rdb.Set(ctx, "quick:now", now, 0).Err(); err != nil {
				t.Fatal(err)
			}
			picks := make([]int, 1+r.Intn(6)) // -1: the bad key
			for j := range picks {
				picks[j] = r.Intn(pool+1) - 1
			}
			var mkeys, all1, all2 []string
			for k := range pool {
				all1 = append(all1, oneByOne[k]...)
				all2 = append(all2, together[k]...)
			}
			for _, p := range picks {
				if p < 0 {
					mkeys = append(mkeys, bad...)
				} else {
					mkeys = append(mkeys, together[p]...)
				}
			}
			runs, ttlTogether := tx(all2, func(p redis.Pipeliner) []*redis.Cmd {
				return []*redis.Cmd{p.FCall(ctx, multi, mkeys, cfg...)}
			})
			reply, err := runs[0].Text()
			if err != nil {
				t.Fatalf("step %d: multi: %v", step, err)
			}
			singles, ttlOne := tx(all1, func(p redis.Pipeliner) []*redis.Cmd {
				var cmds []*redis.Cmd
				for _, k := range picks {
					keys := bad
					if k >= 0 {
						keys = oneByOne[k]
					}
					cmds = append(cmds, p.FCall(ctx, quick, keys, cfg...))
				}
				return cmds
			})
			err = luawire.SplitMulti(reply, len(picks), func(j int, packed, errMsg string) {
				want, werr := singles[j].Result()
				if picks[j] < 0 {
					if !strings.HasPrefix(errMsg, "WRONGTYPE") || werr == nil || !strings.Contains(werr.Error(), "WRONGTYPE") {
						t.Fatalf("step %d, call %d on the bad key: multi %q, quick %v", step, j, errMsg, werr)
					}
					return
				}
				if errMsg != "" || werr != nil || packed != want {
					t.Fatalf("step %d, call %d: multi %q %q, quick %q %v", step, j, packed, errMsg, want, werr)
				}
			})
			if err != nil {
				t.Fatalf("step %d: %v", step, err)
			}
			for k := range pool {
				for j := range def.Keys {
					x, y := oneByOne[k][j], together[k][j]
					tx, ty := ttlOne[k*len(def.Keys)+j], ttlTogether[k*len(def.Keys)+j]
					if sx, sy := quickKeyState(ctx, rdb, x), quickKeyState(ctx, rdb, y); !reflect.DeepEqual(sx, sy) || tx != ty {
						t.Fatalf("step %d: key %q holds %q (TTL %q ms), %q holds %q (TTL %q ms)", step, x, sx, tx, y, sy, ty)
					}
				}
			}
		}
	})
}
