package algo

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestLuaDifferential runs random sequences through each Go transition and its Lua luaTwin
// on a real Redis and requires identical replies, stored states and TTLs. The scripts run
// with farExpiry, so that a TTL at the 2 ms floor cannot run out in real time before it is
// read back on a loaded machine.
func TestLuaDifferential(t *testing.T) {
	t.Parallel()
	addr := startRedis(t)
	rdb := newRedisClient(t, addr, 3)
	const seqs, steps = 12, 1000
	for i, tw := range luaTwins {
		t.Run(tw.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			// farExpiry: the TTLs are checked as the scripts set them, but no key expires in
			// real time between a script and the PTTL that reads its TTL (see farTTL).
			rs := redis.NewScript(farExpiry(tw.family(rand.New(rand.NewSource(1)))[0].Script().Source))
			if err := rs.Load(context.Background(), rdb).Err(); err != nil {
				t.Fatal(err)
			}
			var st diffStats
			for seq := 0; seq < seqs; seq++ {
				seed := int64(1000*(i+1) + seq)
				runDifferential(t, rdb, rs, tw, seed, steps, &st)
			}
			t.Logf("%s: %d steps compared in %v: %+v", tw.name, st.steps, time.Since(start).Round(time.Millisecond), st)
		})
	}
}

// luaTimeStep is a random move of the clock: none, within the scale, across several scales,
// backwards, or a long idle jump.
func luaTimeStep(r *rand.Rand, scale int64) int64 {
	switch x := r.Intn(100); {
	case x < 15:
		return 0
	case x < 50:
		return 1 + r.Int63n(scale/8+1)
	case x < 75:
		return 1 + r.Int63n(scale)
	case x < 85:
		return int64(1+r.Intn(5))*scale + r.Int63n(scale)
	case x < 95:
		return -(1 + r.Int63n(scale))
	default:
		return 1 + r.Int63n(1e11)
	}
}

// luaRandomRequest asks for a few, many, too many or an invalid number of permits, with a
// MaxWait of 0, some time (with a sub-µs remainder), Forever, negative or beyond MaxMicros.
func luaRandomRequest(r *rand.Rand, limit, scale int64) Request {
	var req Request
	switch x := r.Intn(100); {
	case x < 65:
		req.N = 1 + r.Int63n(min(limit, 5))
	case x < 88:
		req.N = 1 + r.Int63n(limit)
	case x < 97:
		req.N = limit + 1 + r.Int63n(3)
		if limit >= maxExact-4 {
			req.N = limit + 2 // a double above 2^53 would round; 2^53+2 is exact
		}
	default:
		req.N = -r.Int63n(2) // invalid: a store rejects it, the transitions answer never
	}
	switch x := r.Intn(100); {
	case x < 45:
	case x < 75:
		req.MaxWait = time.Duration(r.Int63n(3*scale+1))*time.Microsecond + time.Duration(r.Intn(1000))
	case x < 88:
		req.MaxWait = Forever
	case x < 93:
		req.MaxWait = -time.Second
	default:
		req.MaxWait = time.Duration(MaxMicros+r.Int63n(1e6)) * time.Microsecond
	}
	return req
}

// maxWaitArg is ARGV[4] of an apply as lua.go defines it: MaxWait in µs, MaxMicros for
// Forever (the script clamps it as Request.maxWaitMicros does).
func maxWaitArg(req Request) int64 {
	if req.MaxWait == Forever || req.MaxWait/time.Microsecond >= time.Duration(MaxMicros) {
		return MaxMicros
	}
	return req.maxWaitMicros()
}

// clampMicros is the µs of toDuration(us) as a script replies it.
func clampMicros(us int64) int64 { return min(max(us, 0), MaxMicros) }

// diffStats counts what the differential test exercised.
type diffStats struct {
	steps, granted, reserved, denied, never, retryNever, refunds, writes, deletes, otherConfig, storedChecks int
}

// runDifferential runs one seeded sequence of steps on a few keys, adding to st.
func runDifferential(t *testing.T, rdb *redis.Client, rs *redis.Script, tw luaTwin, seed int64, steps int, st *diffStats) {
	t.Helper()
	ctx := context.Background()
	r := rand.New(rand.NewSource(seed))
	fam := tw.family(r)
	scale := tw.scale(fam[0])
	fresh := tw.snap(fam[0].NewState())
	const nkeys = 4
	type grant struct{ n, at int64 }
	states := make([]State, nkeys)
	keys := make([][]string, nkeys)
	grants := make([][]grant, nkeys)
	for k := range states {
		states[k] = fam[0].NewState()
		keys[k] = scriptKeys(fam[0].Script(), fmt.Sprintf("{%s-%d-%d}:%s", tw.name, seed, k, fam[0].Slot()))
	}
	now := 1_700_000_000_000_000 + r.Int63n(1e12)
	if r.Intn(3) == 0 {
		now = r.Int63n(3*scale + 1) // near the epoch: backward steps reach negative instants
	}
	var history []string
	fail := func(step int, format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d, step %d, configs %v, last steps:\n%s\n%s",
			seed, step, fam, strings.Join(history, "\n"), fmt.Sprintf(format, args...))
	}
	for step := 0; step < steps; step++ {
		k := r.Intn(nkeys)
		a := fam[0]
		if r.Intn(4) == 0 {
			a = luaPick(r, fam)
		}
		now += luaTimeStep(r, scale)
		if now > 5e15 { // keep instants, and reservations after them, well below 2^53
			now -= 3e15
		}
		if a != fam[0] {
			st.otherConfig++
		}
		s := states[k]
		before := tw.snap(s)
		var args []any
		var want [7]int64
		granted := false
		apply := !(len(grants[k]) > 0 && r.Intn(8) == 0 || r.Intn(50) == 0)
		if apply {
			req := luaRandomRequest(r, tw.limit(a), scale)
			d := a.Apply(s, now, req)
			want, granted = replyOf(d), d.Allowed
			switch {
			case d.Allowed && d.Wait > 0:
				st.reserved++
			case d.Allowed:
				st.granted++
			case d.RetryAfter == Never && (req.N > tw.limit(a) || req.N <= 0):
				st.never++
			case d.RetryAfter == Never:
				st.retryNever++
			default:
				st.denied++
			}
			if d.Allowed {
				grants[k] = append(grants[k], grant{req.N, d.At})
				if len(grants[k]) > 16 {
					grants[k] = grants[k][1:]
				}
			}
			args = scriptArgs(a, "apply", now, req.N, maxWaitArg(req))
		} else {
			n, at := 1+r.Int63n(3), now-r.Int63n(scale+1)
			if len(grants[k]) > 0 && r.Intn(5) != 0 {
				g := grants[k][len(grants[k])-1-r.Intn(min(len(grants[k]), 4))]
				n, at = 1+r.Int63n(g.n+1), g.at // up to one more than was granted
			}
			a.Refund(s, now, n, at)
			st.refunds++
			args = scriptArgs(a, "refund", now, n, at)
		}
		after := tw.snap(s)
		// A grant is a write even when it leaves the state bit for bit as it was (a GCRA
		// at 1e9/s adds less than the TAT's resolution).
		changed := after != before || granted
		reset := tw.reset(a, s, now)
		history = append(history, fmt.Sprintf("  step %d key %d %v ARGV%v\n    Go state %+v -> %+v, reply %v, reset %d",
			step, k, a, args, before, after, want, reset))
		if len(history) > 6 {
			history = history[1:]
		}
		if apply && changed && clampMicros(reset) != want[4] {
			fail(step, "Go state's reset %d µs differs from the decision's ResetAfter %d µs", reset, want[4])
		}
		if changed {
			st.writes++
		}
		// An apply that leaves a fresh state is deleted by the script; a refund's is kept
		// for the minimum TTL (prelude.lua's keep), as the Go state is.
		deleted := apply && changed && reset <= 0
		if deleted {
			states[k] = a.NewState()
			st.deletes++
		}

		// The script, each key's PTTL and PERSIST in one MULTI: keys then expire only by the
		// scripts' own DEL, since this test's clock is not the server's.
		var run *redis.Cmd
		var ttls []*redis.DurationCmd
		began := time.Now()
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			run = rs.EvalSha(ctx, p, keys[k], args...)
			for _, key := range keys[k] {
				ttls = append(ttls, p.PTTL(ctx, key))
			}
			for _, key := range keys[k] {
				p.Persist(ctx, key)
			}
			return nil
		})
		slack := time.Since(began).Milliseconds() + 1
		if err != nil {
			fail(step, "redis: %v", err)
		}
		if apply {
			vals, err := run.Int64Slice()
			if err != nil {
				fail(step, "script: %v", err)
			}
			got, err := toReply(vals)
			if err != nil || got != want {
				fail(step, "Lua reply %v (%v)\n   Go reply %v", vals, err, want)
			}
		} else if v, err := run.Int64(); err != nil || v != 0 {
			fail(step, "refund replied %v, %v; want 0", v, err)
		}
		for i, c := range ttls {
			got := c.Val() // -2 ns: no key, -1 ns: no TTL
			switch {
			case deleted, !changed && tw.snap(states[k]) == fresh:
				if got != -2 {
					fail(step, "%s: PTTL %v, want the key deleted", keys[k][i], got)
				}
			case changed:
				ms, want := scriptTTL(got).Milliseconds(), ttlMillis(reset) // may be < 0: read after it ran out
				if got < 0 || ms > want || ms < want-slack {
					fail(step, "%s: PTTL %v (%d ms as the script set it), want %d ms (reset %d µs)", keys[k][i], got, ms, want, reset)
				}
			default:
				if got != -1 { // persisted after an earlier write; unchanged means not written
					fail(step, "%s: PTTL %v, want no TTL (nothing was written)", keys[k][i], got)
				}
			}
		}
		if step%16 == 15 || step == steps-1 {
			compareStored(t, rdb, tw, keys, states, func(format string, args ...any) { fail(step, format, args...) })
			st.storedChecks += nkeys
		}
		st.steps++
	}
}

// compareStored reads every key's state back from Redis and compares it with the Go state.
func compareStored(t *testing.T, rdb *redis.Client, tw luaTwin, keys [][]string, states []State, fail func(string, ...any)) {
	t.Helper()
	ctx := context.Background()
	hashes := make([]*redis.MapStringStringCmd, len(keys))
	lists := make([]*redis.StringSliceCmd, len(keys))
	_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for k, ks := range keys {
			hashes[k] = p.HGetAll(ctx, ks[0])
			if len(ks) > 1 {
				lists[k] = p.LRange(ctx, ks[1], 0, -1)
			}
		}
		return nil
	})
	if err != nil {
		fail("reading the state back: %v", err)
	}
	for k := range keys {
		var list []string
		if lists[k] != nil {
			list = lists[k].Val()
		}
		got, err := tw.stored(hashes[k].Val(), list)
		if err != nil {
			fail("%s: stored state does not parse: %v", keys[k][0], err)
		}
		if want := tw.snap(states[k]); got != want {
			fail("%s: stored state %+v, Go state %+v", keys[k][0], got, want)
		}
	}
}
