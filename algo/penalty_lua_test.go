package algo

import (
	"context"
	"fmt"
	"math/rand"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// penaltyRules are the rules the penalty differential wraps: small limits, so that
// offences are frequent.
func penaltyRule(r *rand.Rand) (Scripted, int64, int64) {
	w := time.Duration(luaPick(r, []int64{3, 1000, 250_000, 1_000_000})) * time.Microsecond
	l := luaPick(r, []int64{1, 2, 3, 5})
	rate := luaPick(r, []float64{0.5, 1, 3.7, 10, 1000})
	switch r.Intn(6) {
	case 0:
		return FixedWindow{Limit: l, Window: w}, l, micros(w)
	case 1:
		return SlidingWindowLog{Limit: l, Window: w}, l, micros(w)
	case 2:
		return SlidingWindowCounter{Limit: l, Window: w}, l, micros(w)
	case 3:
		return TokenBucket{Rate: rate, Burst: l}, l, rateScale(rate, l)
	case 4:
		return LeakyBucket{Rate: rate, Capacity: l}, l, rateScale(rate, l)
	default:
		return GCRA{Rate: rate, Burst: l}, l, rateScale(rate, l)
	}
}

// penaltySmoothRule is a smooth rule for the penalty differential: small Limits and
// intervals a luaTimeStep of its scale crosses often.
func penaltySmoothRule(r *rand.Rand) (Scripted, int64, int64) {
	rate := luaPick(r, []float64{1, 3.7, 10, 1000})
	var a Scripted = SmoothBursty{Rate: rate, MaxBurstSeconds: luaPick(r, []float64{0.5, 1, 2.5})}
	if r.Intn(2) == 0 {
		a = SmoothWarmingUp{Rate: rate, Warmup: luaPick(r, []time.Duration{0, 250 * time.Millisecond, time.Second}),
			ColdFactor: luaPick(r, []float64{0, 3, 10})}
	}
	return a, a.(interface{ params() smoothParams }).params().limit(), smoothScale(a)
}

// TestPenaltyLuaDifferential runs random sequences through Penalty's Go transition and its
// Lua twin on a real Redis, wrapped around each rate algorithm (seeds 0-59) and the smooth
// ones (60-79), and requires identical decisions (apply, charge and peek), identical
// penalty fields, and the penalty key's TTL. Around a Chargeable rule one request in five
// is a charge (chargeRequest, from a source of its own, so the other draws of a sequence
// are the ones they were before charges existed).
func TestPenaltyLuaDifferential(t *testing.T) {
	t.Parallel()
	rdb := newRedisClient(t, startRedis(t), 3)
	ctx := context.Background()
	var offences, blocked, granted, peeks, charges, blockedCharges int
	for seed := int64(0); seed < 80; seed++ {
		r := rand.New(rand.NewSource(seed))
		cr := rand.New(rand.NewSource(seed ^ 0xc4a6))
		rule, limit, scale := penaltyRule(r)
		if seed >= 60 {
			rule, limit, scale = penaltySmoothRule(r)
		}
		p := Penalty{Rule: rule, Block: time.Duration(1+r.Int63n(3*scale)) * time.Microsecond}
		if r.Intn(2) == 0 {
			p.Growth = luaPick(r, []float64{1, 1.5, 2, 3.3})
			p.MaxBlock = p.Block * time.Duration(1+r.Intn(20))
		}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		rs := redis.NewScript(farExpiry(p.Script().Source))
		keys := scriptKeys(p.Script(), fmt.Sprintf("{pen-%d}:%s", seed, p.Slot()))
		st := p.NewState()
		now := rateShape.start(r, scale)
		for step := 0; step < 400; step++ {
			now += luaTimeStep(r, scale)
			fail := func(format string, args ...any) {
				t.Helper()
				t.Fatalf("seed %d step %d %v now %d: %s", seed, step, p, now, fmt.Sprintf(format, args...))
			}
			if r.Intn(4) == 0 {
				req := Request{N: 1 + r.Int63n(limit+1)}
				want, ok := Peek(p, st, now, req)
				if !ok {
					fail("Peek: no copy")
				}
				got, err := runDecision(ctx, rdb, rs, keys, PeekArgs(nil, now, req, p.AppendArgs(nil)))
				if err != nil || got != want {
					fail("peek: Lua %+v (%v), Go %+v", got, err, want)
				}
				peeks++
			}
			if r.Intn(10) == 0 {
				n, at := 1+r.Int63n(2), now-r.Int63n(scale+1)
				p.Refund(st, now, n, at)
				v, err := rs.Run(ctx, rdb, keys, RefundArgs(nil, now, n, at, p.AppendArgs(nil))...).Result()
				if err != nil || ParseRefund(v) != nil {
					fail("refund: %v %v", v, err)
				}
				continue
			}
			req := luaRandomRequest(r, limit, scale)
			if req.N <= 0 {
				req.N = 1 // stores reject it
			}
			chargeRequest(cr, p, limit, &req)
			ps := st.(*penaltyState)
			wasBlocked := ps.block > 0 && now < ps.until
			before := *ps
			want := p.Apply(st, now, req)
			got, err := runDecision(ctx, rdb, rs, keys, ApplyArgs(nil, now, req, p.AppendArgs(nil)))
			if err != nil || got != want {
				fail("apply %+v: Lua %+v (%v), Go %+v", req, got, err, want)
			}
			switch {
			case req.Charge:
				charges++
				if wasBlocked {
					blockedCharges++
				}
				if !want.Allowed || ps.until != before.until || ps.block != before.block {
					fail("charge %+v: %+v, penalty %+v -> %+v: want allowed and the penalty unchanged", req, want, before, *ps)
				}
			case wasBlocked:
				blocked++
			case want.Allowed:
				granted++
			}
			h, err := readState(ctx, rdb, keys[len(keys)-1])
			if err != nil {
				fail("%v", err)
			}
			if ps.block == 0 {
				if len(h) != 0 {
					fail("penalty key %v, want none", h)
				}
				continue
			}
			if h["until"] != strconv.FormatInt(ps.until, 10) || h["block"] != strconv.FormatInt(ps.block, 10) || len(h) != 2 {
				fail("penalty key %v, Go until %d block %d", h, ps.until, ps.block)
			}
			if ps.until != before.until { // an offence: the TTL covers the block and what is remembered
				offences++
				pttl := rdb.PTTL(ctx, keys[len(keys)-1]).Val()
				got, want := scriptTTL(pttl).Milliseconds(), ttlMillis(p.end(ps, now))
				if got > want || got < want-1000 {
					fail("penalty key TTL %d ms, want %d", got, want)
				}
			}
		}
	}
	t.Logf("offences %d, blocked %d, granted %d, peeks %d, charges %d (%d blocked)", offences, blocked, granted, peeks, charges, blockedCharges)
	if offences < 100 || blocked < 100 || granted < 100 || peeks < 100 || charges < 100 || blockedCharges < 20 {
		t.Fatal("too few of some kind of step")
	}
}

func runDecision(ctx context.Context, rdb *redis.Client, rs *redis.Script, keys []string, args []any) (Decision, error) {
	v, err := rs.Run(ctx, rdb, keys, args...).Result()
	if err != nil {
		return Decision{}, err
	}
	return decisionOf(v)
}

// TestPenaltyLuaServerTime runs the script on the server's clock: a denial blocks, and
// the block holds on the next call.
func TestPenaltyLuaServerTime(t *testing.T) {
	t.Parallel()
	rdb := newRedisClient(t, startRedis(t), 2)
	ctx := context.Background()
	p := Penalty{Rule: FixedWindow{Limit: 1, Window: time.Hour}, Block: time.Hour}
	rs := redis.NewScript(p.Script().Source)
	keys := scriptKeys(p.Script(), "{st}:"+p.Slot())
	var ds []Decision
	for i := 0; i < 3; i++ {
		d, err := runDecision(ctx, rdb, rs, keys, ApplyArgs(nil, ServerTime, Request{N: 1}, p.AppendArgs(nil)))
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	if !ds[0].Allowed || ds[1].Allowed || ds[2].Allowed || ds[1].RetryAfter < time.Hour || ds[2].RetryAfter > time.Hour {
		t.Fatalf("%+v", ds)
	}
	if ttl := rdb.PTTL(ctx, keys[1]).Val(); ttl < 59*time.Minute {
		t.Fatalf("penalty key TTL %v", ttl)
	}
}

// TestPenaltyLuaEveryRule: the composed script loads and agrees with Go around every
// algorithm with a Lua twin, the smooth ones included, over a short fixed sequence, with
// charges around the Chargeable ones.
func TestPenaltyLuaEveryRule(t *testing.T) {
	t.Parallel()
	rdb := newRedisClient(t, startRedis(t), 2)
	ctx := context.Background()
	rules := append(append([]Scripted(nil), allScripted...),
		SmoothBursty{Rate: 10, MaxBurstSeconds: 0.5}, SmoothWarmingUp{Rate: 10, Warmup: time.Second, ColdFactor: 3})
	for i, rule := range rules {
		p := Penalty{Rule: rule, Block: time.Second, Growth: 2, MaxBlock: 10 * time.Second}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		rs := redis.NewScript(farExpiry(p.Script().Source))
		keys := scriptKeys(p.Script(), fmt.Sprintf("{every-%d}:%s", i, p.Slot()))
		st := p.NewState()
		now := int64(1_700_000_000_000_000)
		for step := 0; step < 40; step++ {
			now += int64(step%7) * 37_000
			req := Request{N: 1 + int64(step%3)}
			if step%5 == 4 && CapabilitiesOf(p)&Chargeable != 0 {
				req = Request{N: 1 + int64(step%11)*2, Charge: true} // some during a block
			}
			want := p.Apply(st, now, req)
			got, err := runDecision(ctx, rdb, rs, keys, ApplyArgs(nil, now, req, p.AppendArgs(nil)))
			if err != nil || got != want {
				t.Fatalf("%v step %d: Lua %+v (%v), Go %+v", p, step, got, err, want)
			}
		}
	}
}
