package algo

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/ratekit/limiter/internal/redistest"
)

// The Lua twins are tested against a real redis-server started by each test through
// internal/redistest: without one on PATH the tests skip loudly, or fail when
// LIMITER_REQUIRE_REDIS is set (CI).

// startRedis starts a throw-away redis-server and returns its address; the server is
// killed when the test ends.
func startRedis(tb testing.TB) string {
	tb.Helper()
	return redistest.Start(tb).Addr()
}

// newRedisClient returns a client speaking RESP protocol (2 or 3) to addr.
func newRedisClient(tb testing.TB, addr string, protocol int) *redis.Client {
	tb.Helper()
	rdb := redis.NewClient(&redis.Options{
		Addr:                     addr,
		Protocol:                 protocol,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	tb.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// scriptKeys returns the KEYS of a decision on the state key base.
func scriptKeys(s *Script, base string) []string {
	keys := make([]string, len(s.Keys))
	for i, suffix := range s.Keys {
		keys[i] = base + suffix
	}
	return keys
}

// applyArgs is the ARGV a store sends for an "apply" of req under a at now (ServerTime:
// the server's TIME).
func applyArgs(a Scripted, now int64, req Request) []any {
	return ApplyArgs(nil, now, req, a.AppendArgs(nil))
}

// refundArgs is the ARGV a store sends for a "refund" under a.
func refundArgs(a Scripted, now, n, at int64) []any {
	return RefundArgs(nil, now, n, at, a.AppendArgs(nil))
}

// usOf converts a Decision duration to the µs a script replies: Never is MaxMicros.
func usOf(d time.Duration) int64 {
	if d == Never {
		return MaxMicros
	}
	return int64(d / time.Microsecond)
}

// decisionOf decodes an "apply" reply as a store does, with ParseDecision, and holds the
// script to what lua.go promises beyond that: a duration is at most MaxMicros (which
// ParseDecision reads as Never, like anything larger).
func decisionOf(reply any) (Decision, error) {
	d, err := ParseDecision(reply)
	if err != nil {
		return d, err
	}
	for _, i := range []int{3, 4, 5} { // retry_after_us, reset_after_us, wait_us
		if us := reply.([]any)[i].(int64); us > MaxMicros {
			return d, fmt.Errorf("reply %v: element %d is %d, want ≤ MaxMicros", reply, i+1, us)
		}
	}
	return d, nil
}

// ttlMillis is the PEXPIRE a write with the given ResetAfter (µs) must set: rounded up to
// ms, and at least 2 ms (Redis ≤ 7.0 may delete a key on "PEXPIRE key 1"; see prelude.lua).
func ttlMillis(reset int64) int64 {
	reset = min(reset, MaxMicros)
	return max(2, (reset+999)/1000)
}

// allScripted is one config of every algorithm, with exact float arithmetic (T = 1e5 µs).
var allScripted = []Scripted{
	FixedWindow{Limit: 5, Window: time.Second},
	SlidingWindowLog{Limit: 5, Window: time.Second},
	SlidingWindowCounter{Limit: 5, Window: time.Second},
	TokenBucket{Rate: 10, Burst: 5},
	LeakyBucket{Rate: 10, Capacity: 5},
	GCRA{Rate: 10, Burst: 5},
}

func TestScriptMetadata(t *testing.T) {
	t.Parallel()
	for _, a := range allScripted {
		s := a.Script()
		if s != a.Script() {
			t.Errorf("%s: Script() returns a new *Script on each call", a.Name())
		}
		if got, want := s.Name, a.Name(); got != want {
			t.Errorf("Script().Name = %q, want %q", got, want)
		}
		if len(s.Keys) == 0 || s.Keys[0] != "" {
			t.Errorf("%s: Keys = %q, want the state key itself first", a.Name(), s.Keys)
		}
		if !strings.Contains(s.Source, "local function ceil_micros") || strings.HasPrefix(s.Source, "#!") {
			t.Errorf("%s: Source lacks the prelude or starts with a shebang", a.Name())
		}
	}
	if got, want := (SlidingWindowLog{}).Script().Keys, []string{"", ":log"}; !reflect.DeepEqual(got, want) {
		t.Errorf("sliding log Keys = %q, want %q", got, want)
	}
	// Floats travel as %.17g strings that read back to the same float64.
	for _, rate := range []float64{0.1, 1.0 / 3, 7e-4, 1e9, 3.7, math.Nextafter(1, 2)} {
		args := TokenBucket{Rate: rate, Burst: 7}.AppendArgs([]any{"x"})
		if len(args) != 3 || args[0] != "x" || args[2] != int64(7) {
			t.Fatalf("AppendArgs = %#v", args)
		}
		f, err := strconv.ParseFloat(args[1].(string), 64)
		if err != nil || f != rate {
			t.Errorf("rate %v sent as %q: read back %v, %v", rate, args[1], f, err)
		}
	}
	if got, want := (FixedWindow{Limit: 3, Window: 1500 * time.Millisecond}).AppendArgs(nil), []any{int64(3), int64(1_500_000)}; !reflect.DeepEqual(got, want) {
		t.Errorf("FixedWindow.AppendArgs = %#v, want %#v", got, want)
	}
}

// TestLuaTTLAndDeletion checks the expiry convention on each algorithm: a grant sets every
// key's TTL to ceil(ResetAfter/1 ms), at least 2 ms; refunding it once its window is over
// makes the state fresh, which is kept for the 2 ms floor; a refund or a denial on a missing key
// writes nothing. (The differential test checks the TTL of every write of its random
// sequences.)
func TestLuaTTLAndDeletion(t *testing.T) {
	t.Parallel()
	rdb := newRedisClient(t, startRedis(t), 3)
	ctx := context.Background()
	const now = 1_700_000_000_250_000
	for _, a := range allScripted {
		t.Run(a.Name(), func(t *testing.T) {
			rs := redis.NewScript(a.Script().Source)
			keys := scriptKeys(a.Script(), "{ttl}:"+a.Slot())
			d := a.Apply(a.NewState(), now, Request{N: 2})
			began := time.Now()
			got, err := rs.Run(ctx, rdb, keys, applyArgs(a, now, Request{N: 2})...).Result()
			if err != nil {
				t.Fatal(err)
			}
			if r, err := decisionOf(got); err != nil || r != d {
				t.Fatalf("reply = %v (%+v, %v); want %+v", got, r, err, d)
			}
			want := ttlMillis(usOf(d.ResetAfter))
			for _, k := range keys {
				ttl, err := rdb.PTTL(ctx, k).Result()
				if err != nil {
					t.Fatal(err)
				}
				// PTTL counts down from the PEXPIRE, by at most the real time since the
				// script was sent (however loaded the machine); a TTL of ~1 s cannot run out
				// unless that much time passed.
				slack := time.Since(began).Milliseconds() + 1
				if got := ttl.Milliseconds(); ttl == -2 && slack < want || ttl != -2 && (got > want || got < want-slack) {
					t.Errorf("PTTL %s = %d ms, want %d ms (ResetAfter %v)", k, got, want, d.ResetAfter)
				}
			}
			// One window (1 s) later, refunding the only grant leaves a fresh state in every
			// algorithm, which the script keeps for the minimum TTL (2 ms) rather than
			// deleting it: the Go twin keeps its timestamps too (prelude.lua's keep).
			if err := rs.Run(ctx, rdb, keys, refundArgs(a, now+1_000_000, 2, d.At)...).Err(); err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				ttl, err := rdb.PTTL(ctx, k).Result()
				if err != nil {
					t.Fatal(err)
				}
				// -2: already expired; otherwise at most the 2 ms floor.
				if ttl != -2 && (ttl < 0 || ttl > 2*time.Millisecond) {
					t.Errorf("after refunding the only grant: PTTL %s = %v, want at most 2ms", k, ttl)
				}
			}
			if err := rdb.Del(ctx, keys...).Err(); err != nil {
				t.Fatal(err)
			}
			// A refund and a never-grantable request on a missing key write nothing.
			if v, err := rs.Run(ctx, rdb, keys, refundArgs(a, now, 1, now)...).Int64(); err != nil || v != 0 {
				t.Errorf("refund on a missing key = %v, %v; want 0", v, err)
			}
			if _, err := rs.Run(ctx, rdb, keys, applyArgs(a, now, Request{N: 99})...).Result(); err != nil {
				t.Fatal(err)
			}
			if n, err := rdb.Exists(ctx, keys...).Result(); err != nil || n != 0 {
				t.Errorf("after a refund and a denial on a missing key: %d keys exist (%v)", n, err)
			}
		})
	}
	t.Run("2ms floor", func(t *testing.T) {
		// A grant whose state is fresh again after 1 µs still gets a TTL of 2 ms. The script
		// reads the server's TIME, so its At tells when (in server ms) the TTL started.
		a := TokenBucket{Rate: 1e9, Burst: 1}
		keys := scriptKeys(a.Script(), "{ttl}:floor")
		rs := redis.NewScript(a.Script().Source)
		var expireAt *redis.Cmd
		var run *redis.Cmd
		began := time.Now()
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			run = rs.Eval(ctx, p, keys, applyArgs(a, ServerTime, Request{N: 1})...)
			expireAt = p.Do(ctx, "PEXPIRETIME", keys[0]) // Redis ≥ 7: absolute ms
			return nil
		})
		got, err2 := decisionOf(run.Val())
		if err2 != nil || !got.Allowed || got.ResetAfter != time.Microsecond {
			t.Fatalf("reply = %v (%+v, %v); want allowed with reset_after_us 1", run.Val(), got, err2)
		}
		if err != nil {
			t.Skipf("PEXPIRETIME needs Redis 7: %v", err)
		}
		// PEXPIRE reads the clock a few µs after the script's TIME: a ms may have ticked, or
		// more if Redis was descheduled in between, but never more than the call took. For
		// the same reason the key may already be gone (PEXPIRETIME -2): Redis 7.0's PEXPIRE
		// deletes a key whose TTL passed while it ran, which only a stall of 2 ms allows.
		elapsed := time.Since(began).Milliseconds()
		at, _ := expireAt.Int64()
		if at == -2 && elapsed >= 2 {
			t.Logf("the key expired during a %d ms call: a loaded machine", elapsed)
		} else if d := at - got.At/1000; d < 2 || d > 3+elapsed {
			t.Errorf("key expires %d ms after the script's now, want 2 (up to %d if ms ticked during the %d ms call)", d, 3+elapsed, elapsed)
		}
	})
}

// TestLuaServerTime checks that ServerTime (ARGV[2] = "") makes the script read the
// server's TIME.
func TestLuaServerTime(t *testing.T) {
	t.Parallel()
	rdb := newRedisClient(t, startRedis(t), 3)
	ctx := context.Background()
	for _, a := range allScripted {
		before := time.Now().UnixMicro()
		got, err := redis.NewScript(a.Script().Source).Run(ctx, rdb, scriptKeys(a.Script(), "{time}:"+a.Slot()),
			applyArgs(a, ServerTime, Request{N: 1})...).Result()
		after := time.Now().UnixMicro()
		if err != nil {
			t.Fatalf("%s: %v", a.Name(), err)
		}
		// Same machine, same clock: the server's now lies within the call, give or take 1 s.
		if d, err := decisionOf(got); err != nil || !d.Allowed || d.At < before-1_000_000 || d.At > after+1_000_000 {
			t.Errorf("%s: reply %v (%v): want allowed at a server time in [%d, %d] ± 1s", a.Name(), got, err, before, after)
		}
	}
}

// TestLuaRESP2AndRESP3 checks that a reply reads the same over both protocols.
func TestLuaRESP2AndRESP3(t *testing.T) {
	t.Parallel()
	addr := startRedis(t)
	ctx := context.Background()
	const now = 1_700_000_000_000_000
	for _, a := range allScripted {
		var replies [2][]any
		for i, proto := range []int{2, 3} {
			rdb := redistest.WithoutExpiry(newRedisClient(t, addr, proto)) // fake instants: see redistest.WithoutExpiry
			keys := scriptKeys(a.Script(), fmt.Sprintf("{resp%d}:%s", proto, a.Slot()))
			rs := redis.NewScript(a.Script().Source)
			// A grant then a denial with a retry, so every field is non-trivial somewhere.
			for _, n := range []int64{4, 3} {
				v, err := rs.Run(ctx, rdb, keys, applyArgs(a, now, Request{N: n})...).Result()
				if err != nil {
					t.Fatalf("%s over RESP%d: %v", a.Name(), proto, err)
				}
				replies[i] = append(replies[i], v)
			}
		}
		if !reflect.DeepEqual(replies[0], replies[1]) {
			t.Errorf("%s: RESP2 reply %#v, RESP3 reply %#v", a.Name(), replies[0], replies[1])
		}
		for _, v := range replies[1] {
			vs, ok := v.([]any)
			if !ok || len(vs) != 7 {
				t.Fatalf("%s: reply %#v is not 7 values", a.Name(), v)
			}
			for _, x := range vs {
				if _, ok := x.(int64); !ok {
					t.Errorf("%s: reply value %#v (%T) is not an integer", a.Name(), x, x)
				}
			}
		}
	}
}
