package algo

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/internal/redistest"
)

// TestSmoothScriptsAndArgs checks the scripts' metadata and the arguments they are sent.
func TestSmoothScriptsAndArgs(t *testing.T) {
	t.Parallel()
	for _, a := range []Scripted{SmoothBursty{Rate: 1}, SmoothWarmingUp{Rate: 1}} {
		s := a.Script()
		if s != a.Script() || s.Name != a.Name() || len(s.Keys) != 1 || s.Keys[0] != "" ||
			!strings.Contains(s.Source, "local function ceil_micros") || strings.HasPrefix(s.Source, "#!") {
			t.Errorf("%s: bad Script %q %q", a.Name(), s.Name, s.Keys)
		}
	}
	cases := []struct {
		a    Scripted
		want []any
	}{
		{SmoothBursty{Rate: 5}, []any{"5", "1"}},
		{SmoothBursty{Rate: 1.0 / 3, MaxBurstSeconds: 2.5}, []any{"0.33333333333333331", "2.5"}},
		{SmoothBursty{Rate: math.Inf(1)}, []any{"+Inf", "1"}},
		{SmoothWarmingUp{Rate: 2, Warmup: 4*time.Second + 999*time.Nanosecond}, []any{"2", int64(4_000_000), "3"}},
		{SmoothWarmingUp{Rate: 0.1, Warmup: 1, ColdFactor: 10}, []any{"0.10000000000000001", int64(0), "10"}},
	}
	for _, c := range cases {
		if got := c.a.AppendArgs(nil); fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%v.AppendArgs = %#v, want %#v", c.a, got, c.want)
		}
	}
}

// TestSmoothLuaServerTimeAndProtocols checks that an empty ARGV[2] makes the scripts read
// the server's TIME, and that replies are the same seven integers over RESP2 and RESP3.
func TestSmoothLuaServerTimeAndProtocols(t *testing.T) {
	t.Parallel()
	addr := startRedis(t)
	ctx := context.Background()
	for _, a := range []Scripted{SmoothBursty{Rate: 5}, SmoothWarmingUp{Rate: 2, Warmup: time.Second}} {
		var replies [2][]any
		for i, proto := range []int{2, 3} {
			rdb := redistest.WithoutExpiry(newRedisClient(t, addr, proto)) // fake instants: see redistest.WithoutExpiry
			rs := redis.NewScript(a.Script().Source)
			keys := scriptKeys(a.Script(), fmt.Sprintf("{smooth-resp%d}:%s", proto, a.Slot()))
			before := time.Now().UnixMicro()
			v, err := rs.Run(ctx, rdb, keys, applyArgs(a, ServerTime, Request{N: 1})...).Result()
			after := time.Now().UnixMicro()
			d, derr := decisionOf(v)
			if err != nil || derr != nil || !d.Allowed || d.At < before-1_000_000 || d.At > after+1_000_000 {
				t.Fatalf("%s over RESP%d: %v, %v, %v: want a grant at the server's time, in [%d, %d] ± 1s", a.Name(), proto, v, err, derr, before, after)
			}
			// A grant then a denial with a retry, at a given time, so that every field is
			// non-trivial somewhere.
			const now = 1_700_000_000_000_000
			for _, n := range []int64{3, 1} {
				r, err := rs.Run(ctx, rdb, scriptKeys(a.Script(), fmt.Sprintf("{smooth-resp%d-b}:%s", proto, a.Slot())),
					applyArgs(a, now, Request{N: n})...).Result()
				if err != nil {
					t.Fatal(err)
				}
				replies[i] = append(replies[i], r)
			}
		}
		if fmt.Sprintf("%#v", replies[0]) != fmt.Sprintf("%#v", replies[1]) {
			t.Errorf("%s: RESP2 %#v, RESP3 %#v", a.Name(), replies[0], replies[1])
		}
	}
}
