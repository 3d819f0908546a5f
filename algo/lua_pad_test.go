package algo

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/internal/luawire"
)

// TestLuaPaddedNow runs every script of this package, a Penalty's included, through one
// history twice: with ARGV[2] the plain client time, and with "now pad" (PaddedNowArg, as
// the Redis store sends with a client clock). The replies must be identical, so the twins
// decide alike whatever the form, and every TTL must be the plain one plus the padding.
func TestLuaPaddedNow(t *testing.T) {
	t.Parallel()
	rdb := newRedisClient(t, startRedis(t), 3)
	ctx := context.Background()
	const pad = 7_000_000 // µs
	scripted := append(append([]Scripted(nil), allScripted...),
		SmoothBursty{Rate: 10, MaxBurstSeconds: 0.5},
		SmoothWarmingUp{Rate: 10, Warmup: time.Second},
		Penalty{Rule: FixedWindow{Limit: 2, Window: time.Second}, Block: time.Second})
	for _, a := range scripted {
		t.Run(a.Name(), func(t *testing.T) {
			if !luawire.Composed(a.Script().Source) {
				t.Fatal("the script does not follow the composition rule (luawire.Composed): the store would not pad its TTLs")
			}
			rs := redis.NewScript(a.Script().Source)
			plain := scriptKeys(a.Script(), "{plain}:"+a.Slot())
			padded := scriptKeys(a.Script(), "{padded}:"+a.Slot())
			now, at := int64(1_700_000_000_000_000), int64(0)
			// gap bounds the real time between writing a plain key and its padded twin, over
			// every step so far: a step that writes nothing leaves the TTLs of an earlier one.
			var gap time.Duration
			for i := range 40 {
				now += 37_000
				if i == 20 {
					now -= 500_000 // a clock stepping back
				}
				args := applyArgs(a, now, Request{N: 1})
				if i%5 == 4 && at != 0 {
					args = refundArgs(a, now, 1, at)
				}
				began := time.Now()
				// Both runs are padded far beyond the test's real time (farTTL), the second by
				// pad more: no key runs out in real time on a loaded machine, and the plain
				// time argument is covered by every other differential.
				args[1] = PaddedNowArg(now, farTTL.Microseconds())
				want, err := rs.Run(ctx, rdb, plain, args...).Result()
				if err != nil {
					t.Fatal(err)
				}
				args[1] = PaddedNowArg(now, farTTL.Microseconds()+pad)
				got, err := rs.Run(ctx, rdb, padded, args...).Result()
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("step %d (%v): reply %v with the padding, %v without", i, args[0], got, want)
				}
				if d, err := ParseDecision(got); err == nil && d.Allowed {
					at = d.At
				}
				gap = max(gap, time.Since(began))
				checkPaddedTTLs(ctx, t, rdb, fmt.Sprint("step ", i), plain, padded, pad/1000, gap)
			}
		})
	}
}

// checkPaddedTTLs compares the PTTL of each padded key with its plain twin's: both gone,
// or the padded one longer by padMs (give or take the rounding, the 2 ms floor and the
// real time between writing a plain key and its padded twin).
func checkPaddedTTLs(ctx context.Context, t *testing.T, rdb *redis.Client, step string, plain, padded []string, padMs int64, took time.Duration) {
	t.Helper()
	for i := range plain {
		// Both TTLs are read in one script, at one instant: two commands apart, a loaded
		// machine could put milliseconds between the reads.
		both, err := rdb.Eval(ctx, "return {redis.call('PTTL', KEYS[1]), redis.call('PTTL', KEYS[2])}",
			[]string{plain[i], padded[i]}).Int64Slice()
		if err != nil {
			t.Fatal(err)
		}
		p, q := time.Duration(both[0])*time.Millisecond, time.Duration(both[1])*time.Millisecond
		pm, qm, slack := both[0], both[1], took.Milliseconds()+2
		switch {
		case p < 0 && q < 0: // both deleted (a fresh state) or both without a key
		case p < 0: // the plain key may have run out of a TTL of a few ms since
			if qm > padMs+slack {
				t.Errorf("%s: PTTL %s = %v, %s = %v, want at most %d ms", step, padded[i], q, plain[i], p, padMs)
			}
		case q < 0:
			t.Errorf("%s: PTTL %s = %v while %s = %v", step, padded[i], q, plain[i], p)
		case qm > pm+padMs+slack || pm > 2+slack && qm < pm+padMs-slack:
			t.Errorf("%s: PTTL %s = %v, want %s's %v + %d ms", step, padded[i], q, plain[i], p, padMs)
		}
	}
}
