package algo

import (
	"context"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/internal/luawire"
)

// quickTimeShadow is farLibShadow (TTLs 11.6 days longer: no key expires in real time
// between a script and the PERSIST after it) whose TIME reads the instant stored at the key
// quick:now, so that the test drives the server's clock, which the quick function always
// reads.
const quickTimeShadow = "local redis = {call = function(cmd, ...) " +
	"if cmd == 'TIME' then local us = tonumber(redis.call('GET', 'quick:now')); " +
	"return {string.format('%d', math.floor(us / 1000000)), string.format('%d', us % 1000000)} end " +
	"if cmd == 'PEXPIRE' then local k, ms = ...; return redis.call(cmd, k, tonumber(ms) + 1000000000) end " +
	"if cmd == 'SET' then local a = {...}; if a[3] == 'PX' then a[4] = tonumber(a[4]) + 1000000000 end return redis.call(cmd, unpack(a)) end " +
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
	for i, a := range Samples() {
		sa, ok := a.(Scripted)
		if !ok || sa.Script().Quick == "" {
			continue
		}
		t.Run(fmt.Sprintf("%d-%s", i, a), func(t *testing.T) {
			def := sa.Script()
			fn, quick, lib := luawire.QuickLibrary(quickTimeShadow + def.Source)
			if quick != fn+luawire.QuickSuffix {
				t.Fatalf("quick function %q, want %q", quick, fn+luawire.QuickSuffix)
			}
			if err := rdb.FunctionLoadReplace(ctx, lib).Err(); err != nil {
				t.Fatal(err)
			}
			keysOf := func(base string) []string {
				keys := make([]string, len(def.Keys))
				for j, k := range def.Keys {
					keys[j] = base + k
				}
				return keys
			}
			full, fast := keysOf(fmt.Sprintf("{q%d}full", i)), keysOf(fmt.Sprintf("{q%d}fast", i))
			// call runs one FCALL in a MULTI with the PTTL of each key (the TTL as the script
			// left it) and a PERSIST of each, so that no key expires in real time and the
			// next call's PTTL shows only what that call set (-1: not written).
			call := func(step int, name string, keys []string, args []any) (any, []time.Duration) {
				t.Helper()
				var run *redis.Cmd
				var ttls []*redis.DurationCmd
				_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
					run = p.FCall(ctx, name, keys, args...)
					for _, k := range keys {
						ttls = append(ttls, p.PTTL(ctx, k))
					}
					for _, k := range keys {
						p.Persist(ctx, k)
					}
					return nil
				})
				if err != nil && run.Err() != nil {
					t.Fatalf("step %d: %s: %v", step, name, run.Err())
				}
				out := make([]time.Duration, len(ttls))
				for j, c := range ttls {
					out[j] = c.Val()
				}
				return run.Val(), out
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
					// A TTL read in the script's MULTI is the one it set, or 1 ms less when a
					// millisecond ticked in between.
					if sw, sg := quickKeyState(ctx, rdb, full[j]), quickKeyState(ctx, rdb, fast[j]); !reflect.DeepEqual(sw, sg) ||
						(tw[j] < 0 || tg[j] < 0) && tw[j] != tg[j] || (tw[j]-tg[j]).Abs() > time.Millisecond {
						t.Fatalf("step %d: key %q holds %q (TTL %v), %q holds %q (TTL %v)", step, full[j], sw, tw[j], fast[j], sg, tg[j])
					}
				}
			}
		})
	}
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
