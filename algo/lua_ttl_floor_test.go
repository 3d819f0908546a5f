package algo

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestLuaTTLFloor: every script sets its shortest TTL to 2 ms, never 1 ("PEXPIRE k 1" may
// delete k at once up to Redis 7.0), the semaphore's and the penalty's keys as the rate
// algorithms' (they share the base's ttl_ms). The script runs inside a wrapper that reads
// every key's PTTL in the same script, where Redis 7 freezes the clock, so the PTTL read
// is exactly the PEXPIRE set.
func TestLuaTTLFloor(t *testing.T) {
	t.Parallel()
	rdb := newRedisClient(t, startRedis(t), 3)
	ctx := context.Background()
	const now = int64(1_700_000_000_000_000)
	// wrap runs src with redis.call shadowed to record the TTL each key is given (PEXPIRE,
	// SET ... PX) and replies them, -2 for a key given none: the TTLs as the script sets
	// them, which a PTTL read after it would show less by the time that passed meanwhile
	// (a millisecond, beside CPU burners).
	wrap := func(src string) *redis.Script {
		return redis.NewScript("local ttls, real = {}, redis\n" +
			"local redis = setmetatable({call = function(cmd, ...)\n" +
			"  local a = {...}\n" +
			"  if cmd == 'PEXPIRE' then ttls[a[1]] = tonumber(a[2]) elseif cmd == 'SET' and a[3] == 'PX' then ttls[a[1]] = tonumber(a[4]) end\n" +
			"  return real.call(cmd, ...)\n" +
			"end}, {__index = real})\n" +
			"local function run(KEYS, ARGV)\n" + src + "\nend\nrun(KEYS, ARGV)\n" +
			"local out = {}\nfor i, k in ipairs(KEYS) do out[i] = ttls[k] or -2 end\nreturn out")
	}
	sem := Semaphore{Permits: 1, LeaseTTL: time.Millisecond}
	// The rule's window is long: its key must outlive the real time between the two
	// calls below, however loaded the machine (a 1 ms window's key may expire in between,
	// and the second call is then a grant, not an offence).
	pen := Penalty{Rule: FixedWindow{Limit: 1, Window: time.Minute}, Block: time.Microsecond}
	for _, tc := range []struct {
		name string
		def  *Script
		args [][]any
		want []any
	}{
		// A lease of 1 ms: the holders key lives 2 ms; the queue keys do not exist.
		{"semaphore", sem.Script(), [][]any{sem.AppendArgs([]any{"acquire", now, "tok", 0})},
			[]any{int64(2), int64(-2), int64(-2), int64(-2)}},
		// A grant then an offence blocking 1 µs: the penalty's key (blocked until 1 µs
		// from now) lives 2 ms. (The window's key was set by the first call, time may
		// have passed since: not compared.)
		{"penalty", pen.Script(), [][]any{
			ApplyArgs(nil, now, Request{N: 1}, pen.AppendArgs(nil)),
			ApplyArgs(nil, now, Request{N: 1}, pen.AppendArgs(nil)),
		}, []any{nil, int64(2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys := scriptKeys(tc.def, "{floor}:"+tc.name)
			var got any
			for _, args := range tc.args {
				var err error
				if got, err = wrap(tc.def.Source).Run(ctx, rdb, keys, args...).Result(); err != nil {
					t.Fatal(err)
				}
			}
			if vals, ok := got.([]any); ok && len(vals) == len(tc.want) {
				for i, w := range tc.want {
					if w == nil {
						vals[i] = nil
					}
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("PTTL of %v = %v, want %v", keys, got, tc.want)
			}
		})
	}
}
