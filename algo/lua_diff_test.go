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

// TestLuaDifferential runs random sequences through each Go transition and its Lua twin
// on a real Redis and requires identical replies, stored states and TTLs (runTwinSeq).
func TestLuaDifferential(t *testing.T) {
	t.Parallel()
	rdb := newRedisClient(t, startRedis(t), 3)
	const seqs, steps = 12, 1000
	for i, tw := range luaTwins {
		t.Run(tw.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			var st diffStats
			for seq := 0; seq < seqs; seq++ {
				runDifferential(t, rdb, tw, int64(1000*(i+1)+seq), steps, &st)
			}
			t.Logf("%s: %d steps compared in %v: %+v", tw.name, st.steps, time.Since(start).Round(time.Millisecond), st)
		})
	}
}

// luaTimeStep is a random move of the clock for the rate twins (see clockStep).
func luaTimeStep(r *rand.Rand, scale int64) int64 { return clockStep(r, scale, 15, 95) }

// clockStep is a random move of the clock: none (still percent of the steps), within the
// scale, across several scales, backwards (up to the back percentile), or a long idle jump.
func clockStep(r *rand.Rand, scale int64, still, back int) int64 {
	switch x := r.Intn(100); {
	case x < still:
		return 0
	case x < 50:
		return 1 + r.Int63n(scale/8+1)
	case x < 75:
		return 1 + r.Int63n(scale)
	case x < 85:
		return int64(1+r.Intn(5))*scale + r.Int63n(scale)
	case x < back:
		return -(1 + r.Int63n(scale))
	default:
		return 1 + r.Int63n(1e11)
	}
}

// randomMaxWait draws a MaxWait of 0, some time up to 3 scales (with a sub-µs remainder),
// Forever, negative or beyond MaxMicros; cut holds the percentiles where the first four
// kinds end.
func randomMaxWait(r *rand.Rand, scale int64, cut [4]int) time.Duration {
	switch x := r.Intn(100); {
	case x < cut[0]:
		return 0
	case x < cut[1]:
		return time.Duration(r.Int63n(3*scale+1))*time.Microsecond + time.Duration(r.Intn(1000))
	case x < cut[2]:
		return Forever
	case x < cut[3]:
		return -time.Second
	default:
		return time.Duration(MaxMicros+r.Int63n(1e6)) * time.Microsecond
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
	req.MaxWait = randomMaxWait(r, scale, [4]int{45, 75, 88, 93})
	return req
}

// clampMicros is the µs of toDuration(us) as a script replies it.
func clampMicros(us int64) int64 { return min(max(us, 0), MaxMicros) }

// seqShape is how runTwinSeq draws the steps of one kind of algorithm; rateShape is the
// shape of the six rate algorithms, smoothShape that of the two smooth ones.
type seqShape struct {
	keys      int  // keys per sequence
	otherOdds int  // one step in otherOdds uses a random config of the family, not the first
	stepScale bool // each step's time scale is its config's, not the first config's
	// start draws the first instant, timeStep how far the clock moves, refund whether the
	// step is a refund, request the request of an apply.
	start    func(r *rand.Rand, scale int64) int64
	timeStep func(r *rand.Rand, scale int64) int64
	refund   func(r *rand.Rand, hasGrants bool) bool
	request  func(r *rand.Rand, limit, scale int64) Request
	// grants makes refunds mostly give back one of the key's recent grants (at its At).
	grants bool
	// refundDeletes: a refund that leaves the state fresh deletes it (the smooth scripts);
	// otherwise it is kept for the minimum TTL (prelude.lua's keep), as the Go state is.
	refundDeletes bool
}

var rateShape = &seqShape{
	keys: 4, otherOdds: 4, timeStep: luaTimeStep, request: luaRandomRequest, grants: true,
	start: func(r *rand.Rand, scale int64) int64 {
		now := 1_700_000_000_000_000 + r.Int63n(1e12)
		if r.Intn(3) == 0 {
			now = r.Int63n(3*scale + 1) // near the epoch: backward steps reach negative instants
		}
		return now
	},
	refund: func(r *rand.Rand, hasGrants bool) bool { return hasGrants && r.Intn(8) == 0 || r.Intn(50) == 0 },
}

// diffStats counts what the differential tests exercised.
type diffStats struct {
	steps, granted, reserved, denied, never, retryNever, refunds, writes, deletes, otherConfig, configChanges, storedChecks, peeks, charges int
}

// chargeRequest turns one request in five for a Chargeable algorithm into a Charge of up
// to three times its limit (drawn from cr, so the other draws of a sequence stay as they were).
func chargeRequest(cr *rand.Rand, a Algorithm, limit int64, req *Request) {
	if CapabilitiesOf(a)&Chargeable == 0 || cr.Intn(5) != 0 {
		return
	}
	*req = Request{N: 1 + cr.Int63n(min(3*limit, maxExact-1)), Charge: true}
}

// runDifferential runs the sequence of seed, its configs drawn by tw.family, adding to st.
func runDifferential(t *testing.T, rdb *redis.Client, tw luaTwin, seed int64, steps int, st *diffStats) {
	t.Helper()
	r := rand.New(rand.NewSource(seed))
	runTwinSeq(t, rdb, tw, r, tw.family(r), seed, steps, st)
}

// runTwinSeq runs one sequence of steps drawn from r (tw's shape) on a few keys, under the
// configs fam of one kind (fam[0] mostly), through the Go transition and its Lua twin, and
// fails at the first step where the script's reply, the TTL it set or the state it stored
// differs. The script runs with farExpiry (the TTLs are checked as the script set them, but
// no key expires in real time between a script and the PTTL that reads its TTL), and each
// step's PTTL, PERSIST and read-back share the script's MULTI, so keys expire only by the
// script's own DEL: this test's clock is not the server's.
func runTwinSeq(t *testing.T, rdb *redis.Client, tw luaTwin, r *rand.Rand, fam []Scripted, seed int64, steps int, st *diffStats) {
	t.Helper()
	ctx := context.Background()
	sh := tw.shape
	if sh == nil {
		sh = rateShape
	}
	rs := loadTwin(ctx, t, rdb, fam[0].Script(), tw.functions)
	scale0 := tw.scale(fam[0])
	fresh := tw.snap(fam[0].NewState())
	type grant struct{ n, at int64 }
	states := make([]State, sh.keys)
	keys := make([][]string, sh.keys)
	grants := make([][]grant, sh.keys)
	last := make([]Scripted, sh.keys) // the config each key was last written with
	for k := range states {
		states[k] = fam[0].NewState()
		keys[k] = scriptKeys(fam[0].Script(), fmt.Sprintf("{%s-%d-%d}:%s", tw.name, seed, k, fam[0].Slot()))
	}
	now := sh.start(r, scale0)
	// pr draws the peeks (see peekTwin) from a source of its own, so the sequence of r is
	// the one it was before peeks existed; cr draws the charges (chargeRequest) alike.
	pr := rand.New(rand.NewSource(seed ^ 0x9eec))
	cr := rand.New(rand.NewSource(seed ^ 0xc4a6))
	var history []string
	fail := func(step int, format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d, step %d, configs %v, last steps:\n%s\n%s",
			seed, step, fam, strings.Join(history, "\n"), fmt.Sprintf(format, args...))
	}
	for step := 0; step < steps; step++ {
		k := r.Intn(sh.keys)
		a := fam[0]
		if r.Intn(sh.otherOdds) == 0 {
			a = luaPick(r, fam)
		}
		scale := scale0
		if sh.stepScale {
			scale = tw.scale(a)
		}
		now += sh.timeStep(r, scale)
		if now > 5e15 { // keep instants, and reservations after them, well below 2^53
			now -= 3e15
		}
		if a != fam[0] {
			st.otherConfig++
		}
		s := states[k]
		if pr.Intn(3) == 0 {
			if msg := peekTwin(ctx, rdb, rs, tw, a, s, keys[k], now, pr, scale); msg != "" {
				fail(step, "peek on key %d: %s", k, msg)
			}
			st.peeks++
		}
		before := tw.snap(s)
		if before != fresh && last[k] != nil && last[k] != a {
			st.configChanges++
		}
		var args []any
		var want Decision
		granted := false
		apply := !sh.refund(r, len(grants[k]) > 0)
		if apply {
			req := sh.request(r, tw.limit(a), scale)
			chargeRequest(cr, a, tw.limit(a), &req)
			want = a.Apply(s, now, req)
			granted = want.Allowed
			switch d := want; {
			case req.Charge:
				st.charges++
				if !d.Allowed {
					fail(step, "charge %+v denied: %+v", req, d)
				}
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
			if sh.grants && granted && !req.Charge {
				grants[k] = append(grants[k], grant{req.N, want.At})
				if len(grants[k]) > 16 {
					grants[k] = grants[k][1:]
				}
			}
			args = applyArgs(a, now, req)
		} else {
			n, at := 1+r.Int63n(3), now-r.Int63n(scale+1)
			if len(grants[k]) > 0 && r.Intn(5) != 0 {
				g := grants[k][len(grants[k])-1-r.Intn(min(len(grants[k]), 4))]
				n, at = 1+r.Int63n(g.n+1), g.at // up to one more than was granted
			}
			a.Refund(s, now, n, at)
			st.refunds++
			args = refundArgs(a, now, n, at)
		}
		after := tw.snap(s)
		// A grant is a write even when it leaves the state bit for bit as it was (a GCRA
		// at 1e9/s adds less than the TAT's resolution).
		changed := after != before || granted
		reset := tw.reset(a, s, now)
		history = append(history, fmt.Sprintf("  step %d key %d %v ARGV%v\n    Go state %+v -> %+v, decision %+v, reset %d",
			step, k, a, args, before, after, want, reset))
		if len(history) > 6 {
			history = history[1:]
		}
		if apply && changed && clampMicros(reset) != usOf(want.ResetAfter) {
			fail(step, "Go state's reset %d µs differs from the decision's ResetAfter %v", reset, want.ResetAfter)
		}
		if changed {
			st.writes++
			last[k] = a
		}
		// An apply that leaves a fresh state deletes it, and so does a refund with
		// refundDeletes.
		deleted := changed && reset <= 0 && (apply || sh.refundDeletes)
		if deleted {
			states[k] = a.NewState()
			st.deletes++
		}

		var run *redis.Cmd
		var ttls []*redis.DurationCmd
		var hash *redis.Cmd
		var list *redis.StringSliceCmd
		began := time.Now()
		_, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			run = rs.run(ctx, p, keys[k], args)
			for _, key := range keys[k] {
				ttls = append(ttls, p.PTTL(ctx, key))
			}
			for _, key := range keys[k] {
				p.Persist(ctx, key)
			}
			hash = stateCmd(ctx, p, keys[k][0])
			if len(keys[k]) > 1 {
				list = p.LRange(ctx, keys[k][1], 0, -1)
			}
			return nil
		})
		slack := time.Since(began).Milliseconds() + 1
		if err != nil {
			fail(step, "redis: %v", err)
		}
		if apply {
			v, err := run.Result()
			if err != nil {
				fail(step, "script: %v", err)
			}
			if got, err := decisionOf(v); err != nil || got != want {
				fail(step, "Lua reply %v: %+v (%v)\n   Go decision %+v", v, got, err, want)
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
		var l []string
		if list != nil {
			l = list.Val()
		}
		h, err := stateOf(hash)
		if err != nil {
			fail(step, "%s: stored state does not read: %v", keys[k][0], err)
		}
		stored, err := tw.stored(h, l)
		if err != nil {
			fail(step, "%s: stored state does not parse: %v", keys[k][0], err)
		}
		if want := tw.snap(states[k]); stored != want {
			fail(step, "%s: stored state %+v, Go state %+v", keys[k][0], stored, want)
		}
		st.storedChecks++
		st.steps++
	}
}
