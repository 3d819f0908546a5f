package algo

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/internal/redistest"
)

// craftedState is a rate algorithm state written straight into Redis: its float (tokens,
// level or TAT) is arbitrary, not the result of a history.
type craftedState struct {
	a      Scripted
	x      float64
	last   int64
	fields func(x float64, last int64) []any // the hash, as the script stores it
	state  func(x float64, last int64) State
	req    *Request // if set, the request to apply at now (else a random one)
}

// TestLuaCraftedStates compares the luaTwins on arbitrary fractional states of the rate
// algorithms, including leaky-bucket states whose shaping bound rounds against the wait
// (RetryAfter's 1 µs floor), which random histories seldom reach.
func TestLuaCraftedStates(t *testing.T) {
	t.Parallel()
	rdb := redistest.WithoutExpiry(newRedisClient(t, startRedis(t), 3)) // fake instants: see redistest.WithoutExpiry
	ctx := context.Background()
	const seed, perAlgo = 7, 1500
	r := rand.New(rand.NewSource(seed))
	const now = 1_700_000_000_123_456
	ff := func(x float64) string { return strconv.FormatFloat(x, 'g', 17, 64) }
	rateOf := func() float64 { return math.Exp(r.Float64()*20 - 8) } // [3e-4, 8e4] per second
	var cases []craftedState
	for i := 0; i < perAlgo; i++ {
		rate, size := rateOf(), 1+r.Int63n(50)
		last := now - r.Int63n(int64(float64(size)/rate*1e6)+1)
		cases = append(cases,
			craftedState{a: TokenBucket{Rate: rate, Burst: size}, x: (r.Float64()*3 - 2) * float64(size), last: last,
				fields: func(x float64, l int64) []any { return []any{"tokens", ff(x), "last", l} },
				state:  func(x float64, l int64) State { return &tokenBucketState{tokens: x, last: l, mark: olderVersion} }},
			craftedState{a: LeakyBucket{Rate: rate, Capacity: size}, x: r.Float64() * 2 * float64(size), last: last,
				fields: func(x float64, l int64) []any { return []any{"level", ff(x), "last", l} },
				state:  func(x float64, l int64) State { return &leakyBucketState{valid: true, level: x, last: l} }},
			craftedState{a: GCRA{Rate: rate, Burst: size}, x: float64(now) + (r.Float64()*2-0.5)*float64(size)*1e6/rate,
				fields: func(x float64, _ int64) []any { return []any{"tat", ff(x)} },
				state:  func(x float64, _ int64) State { return &gcraState{valid: true, tat: x} }},
		)
	}
	// Leaky-bucket states at exactly the shaping bound q = maxWait/1e6·rate, where
	// ceil(q/rate·1e6) can exceed maxWait: denied with RetryAfter 1 µs.
	edges := 0
	for i := 0; i < 1_000_000 && edges < 20; i++ {
		rate, maxWait := rateOf(), 1+r.Int63n(1_000_000)
		q := float64(maxWait) / 1e6 * rate
		if q < 1 && ceilMicros(q/rate*1e6) > maxWait {
			edges++
			lb := LeakyBucket{Rate: rate, Capacity: 2 + r.Int63n(10)} // bound = q < Capacity-1
			cases = append(cases, craftedState{a: lb, x: q, last: now,
				fields: func(x float64, l int64) []any { return []any{"level", ff(x), "last", l} },
				state:  func(x float64, l int64) State { return &leakyBucketState{valid: true, level: x, last: l} }})
			cases[len(cases)-1].last = -maxWait // marks the MaxWait to use below
		}
	}
	if edges == 0 {
		t.Fatalf("seed %d: found no leaky-bucket rounding edge to test", seed)
	}
	tbFields := func(x float64, l int64) []any { return []any{"tokens", ff(x), "last", l} }
	tbState := func(x float64, l int64) State { return &tokenBucketState{tokens: x, last: l, mark: olderVersion} }
	lbFields := func(x float64, l int64) []any { return []any{"level", ff(x), "last", l} }
	lbState := func(x float64, l int64) State { return &leakyBucketState{valid: true, level: x, last: l} }
	// Token-bucket deficits around the 1 ns that x/time/rate resolves: a deficit that
	// refills in f ns is waited for only when f ≥ 1.
	tiny := 0
	for _, rate := range []float64{1e6, 3.7e6, 1e8, 1e9} {
		for _, f := range []float64{0.1, 0.5, 0.999, 1, 1.5} {
			for n := int64(1); n <= 3; n++ {
				x := float64(n) - f*rate/1e9
				if x == float64(n) {
					continue
				}
				tiny++
				cases = append(cases, craftedState{a: TokenBucket{Rate: rate, Burst: 5}, x: x, last: now,
					fields: tbFields, state: tbState, req: &Request{N: n}})
			}
		}
	}
	// Leaky-bucket levels at capacity 2^53, where capacity - level rounds up to capacity.
	for _, x := range []float64{0.25, 0.5, 1.5, 2.75, 1e3 + 0.5} {
		cases = append(cases, craftedState{a: LeakyBucket{Rate: 1, Capacity: maxExact}, x: x, last: now,
			fields: lbFields, state: lbState, req: &Request{N: 1}})
	}
	// States last written at an instant after now (a clock that stepped backwards).
	for _, lag := range []int64{1, 999, 1_000_000} {
		for _, mw := range []time.Duration{0, time.Second} {
			cases = append(cases,
				craftedState{a: TokenBucket{Rate: 10, Burst: 5}, x: 2.5, last: now + lag,
					fields: tbFields, state: tbState, req: &Request{N: 1, MaxWait: mw}},
				craftedState{a: TokenBucket{Rate: 10, Burst: 5}, x: 0.5, last: now + lag,
					fields: tbFields, state: tbState, req: &Request{N: 3, MaxWait: mw}},
				craftedState{a: LeakyBucket{Rate: 10, Capacity: 5}, x: 2.5, last: now + lag,
					fields: lbFields, state: lbState, req: &Request{N: 1, MaxWait: mw}},
				craftedState{a: LeakyBucket{Rate: 10, Capacity: 5}, x: 4.5, last: now + lag,
					fields: lbFields, state: lbState, req: &Request{N: 3, MaxWait: mw}})
		}
	}
	twinOf := map[string]luaTwin{}
	for _, tw := range luaTwins {
		twinOf[tw.name] = tw
	}
	denied1us, tinyGranted := 0, 0
	for i, c := range cases {
		req := Request{N: 1 + r.Int63n(3), MaxWait: time.Duration(r.Int63n(3_000_000)) * time.Microsecond}
		last, at := c.last, now+r.Int63n(2)
		switch {
		case c.req != nil:
			req, at = *c.req, now
		case last < 0: // an edge: at the bound, asking with that MaxWait
			req, last, at = Request{N: 1, MaxWait: time.Duration(-last) * time.Microsecond}, now, now
		}
		key := fmt.Sprintf("{crafted-%d}", i)
		st := c.state(c.x, last)
		d := c.a.Apply(st, at, req)
		if !d.Allowed && d.RetryAfter == time.Microsecond {
			denied1us++
		}
		if _, ok := c.a.(TokenBucket); ok && c.req != nil && d.Allowed && d.Wait == 0 && c.x < float64(req.N) {
			tinyGranted++ // granted in debt: a sub-nanosecond deficit
		}
		var run *redis.Cmd
		var hash *redis.Cmd
		if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, key, c.fields(c.x, last)...)
			run = redis.NewScript(c.a.Script().Source).Eval(ctx, p, []string{key}, applyArgs(c.a, at, req)...)
			hash = stateCmd(ctx, p, key)
			p.Del(ctx, key)
			return nil
		}); err != nil {
			t.Fatalf("seed %d case %d: %v", seed, i, err)
		}
		vals, err := run.Result()
		if err != nil {
			t.Fatalf("seed %d case %d: %v", seed, i, err)
		}
		if got, err := decisionOf(vals); err != nil || got != d {
			t.Fatalf("seed %d case %d: %v at %d, state %s %d, %+v:\nLua reply %v (%+v, %v)\n Go decision %+v",
				seed, i, c.a, at, ff(c.x), last, req, vals, got, err, d)
		}
		tw := twinOf[c.a.Name()]
		h, err := stateOf(hash)
		if err != nil {
			t.Fatalf("seed %d case %d: %v", seed, i, err)
		}
		got, err := tw.stored(h, nil)
		if want := tw.snap(st); err != nil || got != want && !(len(h) == 0 && tw.reset(c.a, st, at) <= 0) {
			t.Fatalf("seed %d case %d: %v: stored state %+v (%v), Go state %+v", seed, i, c.a, got, err, want)
		}
	}
	if denied1us < edges {
		t.Errorf("only %d of %d leaky-bucket edges were denied with RetryAfter 1µs", denied1us, edges)
	}
	if tinyGranted == 0 || tinyGranted == tiny {
		t.Errorf("%d of %d token-bucket sub-nanosecond deficits granted at once, want some but not all", tinyGranted, tiny)
	}
	t.Logf("%d crafted states compared (%d leaky-bucket rounding edges, %d of %d sub-ns deficits granted at once)",
		len(cases), edges, tinyGranted, tiny)
}

// TestLuaSlidingLogHalfDeleted checks that the sliding log survives losing one of its two
// keys (evicted under maxmemory, say): the list is the truth and total follows it.
func TestLuaSlidingLogHalfDeleted(t *testing.T) {
	t.Parallel()
	rdb := redistest.WithoutExpiry(newRedisClient(t, startRedis(t), 3)) // fake instants: see redistest.WithoutExpiry
	ctx := context.Background()
	a := SlidingWindowLog{Limit: 5, Window: time.Second}
	const now = 1_700_000_000_000_000
	entries := []logEntry{{now - 900_000, 2}, {now - 100_000, 1}}
	for _, tc := range []struct {
		name       string
		hash, list bool
		want       State // the Go state the Redis keys stand for
	}{
		{"list only", false, true, &slidingLogState{entries: entries, total: 3}},
		{"hash only", true, false, a.NewState()},
	} {
		keys := scriptKeys(a.Script(), "{half}:"+tc.name)
		if tc.hash {
			rdb.HSet(ctx, keys[0], "total", 3)
		}
		if tc.list {
			for _, e := range entries {
				rdb.RPush(ctx, keys[1], fmt.Sprintf("%d:%d", e.t, e.n))
			}
		}
		for i, n := range []int64{2, 1, 1} { // fits, fits, then the limit is reached
			d := a.Apply(tc.want, now+int64(i), Request{N: n})
			got, err := redis.NewScript(a.Script().Source).Run(ctx, rdb, keys, applyArgs(a, now+int64(i), Request{N: n})...).Result()
			if err != nil {
				t.Fatal(err)
			}
			if r, err := decisionOf(got); err != nil || r != d {
				t.Errorf("%s, request %d: Lua reply %v (%+v, %v), Go decision %+v", tc.name, i, got, r, err, d)
			}
		}
	}
}

// edgeStep is one call of a hand-written sequence.
type edgeStep struct {
	op          string
	now, n, arg int64 // arg: MaxWait in µs for apply, At for refund
}

// runEdgeSteps runs steps through a's Go transition and its Lua twin on fresh keys, and
// requires the same replies and, after every step, the same stored state. The steps'
// instants are fake while Redis expires keys in real time (a refund's 2 ms floor can pass
// between two steps on a loaded machine), so rdb must come from redistest.WithoutExpiry.
func runEdgeSteps(t *testing.T, rdb *redis.Client, a Scripted, name string, steps []edgeStep) {
	t.Helper()
	ctx := context.Background()
	var tw luaTwin
	for _, x := range luaTwins {
		if x.name == a.Name() {
			tw = x
		}
	}
	keys := scriptKeys(a.Script(), "{edges}:"+name)
	rs := redis.NewScript(a.Script().Source)
	st := a.NewState()
	for i, s := range steps {
		var args []any
		var want Decision
		if s.op == "apply" {
			req := Request{N: s.n, MaxWait: time.Duration(s.arg) * time.Microsecond}
			want = a.Apply(st, s.now, req)
			args = applyArgs(a, s.now, req)
		} else {
			a.Refund(st, s.now, s.n, s.arg)
			args = refundArgs(a, s.now, s.n, s.arg)
		}
		v, err := rs.Run(ctx, rdb, keys, args...).Result()
		if err != nil {
			t.Fatalf("%s, step %d: %v", name, i, err)
		}
		if s.op == "apply" {
			if got, err := decisionOf(v); err != nil || got != want {
				t.Errorf("%s, step %d %+v: Lua reply %v (%+v, %v), Go decision %+v", name, i, s, v, got, err, want)
			}
		} else if v != int64(0) {
			t.Errorf("%s, step %d %+v: refund replied %v, want 0", name, i, s, v)
		}
		h, _ := readState(ctx, rdb, keys[0])
		var l []string
		if len(keys) > 1 {
			l, _ = rdb.LRange(ctx, keys[1], 0, -1).Result()
		}
		stored, err := tw.stored(h, l)
		// The script deletes a state that is fresh again, which the Go state may still hold.
		if want := tw.snap(st); err != nil || stored != want && !(len(h) == 0 && len(l) == 0 && tw.reset(a, st, s.now) <= 0) {
			t.Errorf("%s, step %d %+v: stored %+v (%v), Go state %+v", name, i, s, stored, err, want)
		}
	}
}

// TestLuaSlidingLogRefundEdges drives both twins through refunds that empty an entry: the
// newest stays, empty ("T:0"), at its own instant even when now is earlier; any other goes.
func TestLuaSlidingLogRefundEdges(t *testing.T) {
	t.Parallel()
	rdb := redistest.WithoutExpiry(newRedisClient(t, startRedis(t), 3)) // see runEdgeSteps
	a := SlidingWindowLog{Limit: 2, Window: time.Second}
	const t0 = 1_700_000_000_000_000
	for _, tc := range []struct {
		name  string
		steps []edgeStep
	}{
		{"refund the only entry", []edgeStep{{"apply", t0, 1, 0}, {"refund", t0 + 5, 1, t0}, {"apply", t0 + 6, 2, 0}}},
		{"refund a reservation, now after the previous entry", []edgeStep{
			{"apply", t0, 2, 0}, {"apply", t0 + 10, 1, 2_000_000}, {"refund", t0 + 20, 1, t0 + 1_000_000}, {"apply", t0 + 30, 1, 2_000_000}}},
		{"refund a reservation, now at the previous entry", []edgeStep{
			{"apply", t0, 2, 0}, {"apply", t0, 1, 2_000_000}, {"refund", t0, 1, t0 + 1_000_000}, {"apply", t0 + 1, 1, 2_000_000}}},
		{"refund a reservation, now before the previous entry", []edgeStep{
			{"apply", t0, 2, 0}, {"apply", t0 + 10, 1, 2_000_000}, {"refund", t0 - 50, 1, t0 + 1_000_000}, {"apply", t0 - 40, 2, 5_000_000}}},
		{"refund a middle entry", []edgeStep{
			{"apply", t0, 1, 0}, {"apply", t0 + 10, 1, 0}, {"refund", t0 + 20, 1, t0}, {"apply", t0 + 30, 1, 0}}},
		{"refund an emptied entry again", []edgeStep{
			{"apply", t0, 1, 0}, {"refund", t0 + 5, 1, t0}, {"refund", t0 + 3, 1, t0}, {"refund", t0 + 7, 1, t0 + 3}}},
	} {
		runEdgeSteps(t, rdb, a, tc.name, tc.steps)
	}
}

// TestLuaBucketRefundToFresh checks the refunds that leave a bucket full (token), empty
// (leaky) or idle (GCRA) again: fresh, and deleted, when that happens at now; kept, with
// its instant, when the state is ahead of a backwards now, until a refund at that instant.
func TestLuaBucketRefundToFresh(t *testing.T) {
	t.Parallel()
	rdb := redistest.WithoutExpiry(newRedisClient(t, startRedis(t), 3)) // see runEdgeSteps
	const t0 = 1_700_000_000_000_000
	for _, a := range []Scripted{TokenBucket{Rate: 10, Burst: 5}, LeakyBucket{Rate: 10, Capacity: 5}} {
		runEdgeSteps(t, rdb, a, a.Name()+" at now", []edgeStep{
			{"apply", t0, 2, 0}, {"refund", t0 + 10, 2, t0}, {"apply", t0 - 5, 1, 0}})
		runEdgeSteps(t, rdb, a, a.Name()+" behind, then at the instant", []edgeStep{
			{"apply", t0, 2, 0}, {"refund", t0 - 1000, 5, t0}, {"apply", t0 - 999, 1, 0},
			{"refund", t0 - 900, 1, t0}, {"refund", t0 - 900, 1, t0}, {"refund", t0, 1, t0}, {"apply", t0 - 5, 1, 0}})
	}
	g := GCRA{Rate: 10, Burst: 5} // T = 100 ms
	runEdgeSteps(t, rdb, g, "gcra to exactly now", []edgeStep{
		{"apply", t0, 2, 0}, {"refund", t0 + 100_000, 1, t0}, {"apply", t0 + 100_000, 1, 0},
		{"refund", t0 + 150_000, 1, t0}, {"apply", t0 + 150_000 - 7, 1, 0}})
	runEdgeSteps(t, rdb, g, "gcra past now", []edgeStep{
		{"apply", t0, 1, 0}, {"refund", t0 + 50_000, 3, t0}, {"apply", t0 + 40_000, 5, 0}})
}

// TestLuaHugeN checks requests around 2^53, where the script's doubles stop being exact:
// 2^53+1 reads as 2^53 in Lua, yet exceeds a limit of 2^53.
func TestLuaHugeN(t *testing.T) {
	t.Parallel()
	rdb := redistest.WithoutExpiry(newRedisClient(t, startRedis(t), 3)) // fake instants: see redistest.WithoutExpiry
	ctx := context.Background()
	const now = 1_700_000_000_000_000
	for _, a := range []Scripted{
		FixedWindow{Limit: maxExact, Window: time.Second},
		SlidingWindowLog{Limit: maxExact, Window: time.Second},
		SlidingWindowCounter{Limit: maxExact, Window: time.Second},
		TokenBucket{Rate: 1, Burst: maxExact},
		LeakyBucket{Rate: 1, Capacity: maxExact},
		GCRA{Rate: 1e6, Burst: maxExact / 1_000_000},
	} {
		keys := scriptKeys(a.Script(), "{huge}:"+a.Slot())
		st := a.NewState()
		for _, n := range []int64{maxExact + 1, maxExact, maxExact + 1, maxExact + 3, math.MaxInt64, maxExact / 1_000_000, 1} {
			d := a.Apply(st, now, Request{N: n, MaxWait: Forever})
			args := applyArgs(a, now, Request{N: n, MaxWait: Forever})
			args[3] = MaxMicros // a hand-written call's Forever: the script clamps it to MaxMicros-1 too
			got, err := redis.NewScript(a.Script().Source).Run(ctx, rdb, keys, args...).Result()
			if err != nil {
				t.Fatalf("%v, N=%d: %v", a, n, err)
			}
			if r, err := decisionOf(got); err != nil || r != d {
				t.Errorf("%v, N=%d: Lua reply %v (%+v, %v), Go decision %+v", a, n, got, r, err, d)
			}
		}
	}
}
