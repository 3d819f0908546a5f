package algo

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratekit/limiter/internal/redistest"
)

// Instants of the charge tests, in µs: t0 is early 2026.
const (
	chargeSec int64 = 1_000_000
	chargeT0  int64 = 1_770_000_000_000_000
)

// chargeStep is one call of a charge table: a Charge of n at now when charge is set,
// otherwise Apply of {n, maxWait}; want is the whole Decision (Limit filled in).
type chargeStep struct {
	now     int64
	n       int64
	maxWait time.Duration
	charge  bool
	want    Decision
}

// runChargeSteps applies the table to st in order and requires each Decision exactly.
func runChargeSteps(t *testing.T, a Algorithm, st State, steps []chargeStep) {
	t.Helper()
	limit := chargeQuota(a).Limit
	for i, s := range steps {
		want := s.want
		want.Limit = limit
		got := a.Apply(st, s.now, Request{N: s.n, MaxWait: s.maxWait, Charge: s.charge})
		require.Equal(t, want, got, "%v step %d: now t0%+dµs N=%d MaxWait=%v charge=%v",
			a, i, s.now-chargeT0, s.n, s.maxWait, s.charge)
	}
}

// chargeQuota is QuotaOf for a config that has one.
func chargeQuota(a Algorithm) Quota {
	q, ok := QuotaOf(a)
	if !ok {
		panic(fmt.Sprintf("no Quota: %T", a))
	}
	return q
}

// TestGCRAChargeDebt is the example on GCRA{Rate: 1, Burst: 10} (T = 1 s): 5 taken,
// a charge of 20 moves the TAT to t0 + 25 s, 15 intervals past Burst·T: one permit once
// the TAT is within 9 s of now, at t0 + 16 s, as the token bucket's 15 tokens of debt.
// A reservation is granted at once and acts then; the key is fresh at t0 + 25 s.
func TestGCRAChargeDebt(t *testing.T) {
	a := GCRA{Rate: 1, Burst: 10}
	st := a.NewState()
	runChargeSteps(t, a, st, []chargeStep{
		{now: chargeT0, n: 5, want: Decision{Allowed: true, Remaining: 5, ResetAfter: 5 * time.Second, At: chargeT0}},
		{now: chargeT0, n: 20, charge: true, want: Decision{Allowed: true, Remaining: 0,
			RetryAfter: 16 * time.Second, ResetAfter: 25 * time.Second, At: chargeT0}},
		{now: chargeT0, n: 1, want: Decision{RetryAfter: 16 * time.Second, ResetAfter: 25 * time.Second}},
		{now: chargeT0 + 16*chargeSec - 1, n: 1, want: Decision{RetryAfter: time.Microsecond, ResetAfter: 9*time.Second + time.Microsecond}},
	})
	// A reservation waits the debt out: it acts at t0 + 16 s.
	rsv := st.(*gcraState).CloneState()
	runChargeSteps(t, a, rsv, []chargeStep{
		{now: chargeT0 + 3*chargeSec, n: 1, maxWait: Forever, want: Decision{Allowed: true, Remaining: 0,
			ResetAfter: 23 * time.Second, Wait: 13 * time.Second, At: chargeT0 + 16*chargeSec}},
	})
	runChargeSteps(t, a, st, []chargeStep{
		{now: chargeT0 + 16*chargeSec, n: 1, want: Decision{Allowed: true, Remaining: 0, ResetAfter: 10 * time.Second, At: chargeT0 + 16*chargeSec}},
		// Fresh again 10 s later: the whole Burst.
		{now: chargeT0 + 26*chargeSec, n: 10, want: Decision{Allowed: true, Remaining: 0, ResetAfter: 10 * time.Second, At: chargeT0 + 26*chargeSec}},
	})
}

// TestGCRAChargeWithinBurst: a charge that fits takes what AllowN takes and reports no
// RetryAfter; one that takes the last permit reports the next interval.
func TestGCRAChargeWithinBurst(t *testing.T) {
	a := GCRA{Rate: 1, Burst: 10}
	runChargeSteps(t, a, a.NewState(), []chargeStep{
		{now: chargeT0, n: 4, charge: true, want: Decision{Allowed: true, Remaining: 6, ResetAfter: 4 * time.Second, At: chargeT0}},
		{now: chargeT0, n: 6, charge: true, want: Decision{Allowed: true, Remaining: 0, RetryAfter: time.Second, ResetAfter: 10 * time.Second, At: chargeT0}},
	})
}

// TestGCRAChargeBehindRateChange: a charge behind the clock under a new rate is decided at
// the last write's instant, as Apply decides it, and its figures are counted from the
// caller's now. GCRA{Rate: 1} took 5 at t0 (TAT t0 + 5 s); at Rate 2 (T = 0.5 s) the TAT is
// t0 + 2.5 s; a charge of 20 at t0 - 1 s moves it to t0 + 12.5 s, 13.5 s from the caller:
// one permit when it is within 9·0.5 s, 9 s from the caller.
func TestGCRAChargeBehindRateChange(t *testing.T) {
	st := GCRA{Rate: 1, Burst: 10}.NewState()
	runChargeSteps(t, GCRA{Rate: 1, Burst: 10}, st, []chargeStep{
		{now: chargeT0, n: 5, want: Decision{Allowed: true, Remaining: 5, ResetAfter: 5 * time.Second, At: chargeT0}},
	})
	a := GCRA{Rate: 2, Burst: 10}
	runChargeSteps(t, a, st, []chargeStep{
		{now: chargeT0 - chargeSec, n: 20, charge: true, want: Decision{Allowed: true, Remaining: 0,
			RetryAfter: 9 * time.Second, ResetAfter: 13500 * time.Millisecond, At: chargeT0}},
		{now: chargeT0 + 8*chargeSec - 1, n: 1, want: Decision{RetryAfter: time.Microsecond, ResetAfter: 4500*time.Millisecond + time.Microsecond}},
		{now: chargeT0 + 8*chargeSec, n: 1, want: Decision{Allowed: true, Remaining: 0, ResetAfter: 5 * time.Second, At: chargeT0 + 8*chargeSec}},
	})
}

// TestGCRAChargeCapped: a charge past a wait of MaxMicros leaves the TAT at now + MaxMicros
// + Burst·T (whole µs, far below 2^53), as a rescaled TAT is capped: never granted, not
// even with MaxWait Forever, and the same after a second charge.
func TestGCRAChargeCapped(t *testing.T) {
	a := GCRA{Rate: 1, Burst: 10}
	st := a.NewState()
	never := Decision{Allowed: true, Remaining: 0, RetryAfter: Never, ResetAfter: Never, At: chargeT0}
	runChargeSteps(t, a, st, []chargeStep{
		{now: chargeT0, n: maxExact, charge: true, want: never},
		{now: chargeT0, n: maxExact, charge: true, want: never},
		{now: chargeT0, n: 1, maxWait: Forever, want: Decision{RetryAfter: Never, ResetAfter: Never}},
	})
	assert.Equal(t, float64(chargeT0+MaxMicros+10*chargeSec), st.(*gcraState).tat)
}

// TestLeakyBucketChargeDebt: LeakyBucket{Rate: 1, Capacity: 10}, 5 poured, a charge of 20
// raises the level to 25, 15 past Capacity: one unit fits once the level is down to 9, at
// t0 + 16 s, as the token bucket's. The shaping queue is full until then, so a request
// with MaxWait Forever is denied too (with the same RetryAfter), and once it fits it
// waits behind the 9 units left; the bucket is empty at t0 + 25 s.
func TestLeakyBucketChargeDebt(t *testing.T) {
	a := LeakyBucket{Rate: 1, Capacity: 10}
	st := a.NewState()
	runChargeSteps(t, a, st, []chargeStep{
		{now: chargeT0, n: 5, want: Decision{Allowed: true, Remaining: 5, ResetAfter: 5 * time.Second, At: chargeT0}},
		{now: chargeT0, n: 20, charge: true, want: Decision{Allowed: true, Remaining: 0,
			RetryAfter: 16 * time.Second, ResetAfter: 25 * time.Second, At: chargeT0}},
		{now: chargeT0, n: 1, want: Decision{RetryAfter: 16 * time.Second, ResetAfter: 25 * time.Second}},
		{now: chargeT0, n: 1, maxWait: Forever, want: Decision{RetryAfter: 16 * time.Second, ResetAfter: 25 * time.Second}},
		{now: chargeT0 + 16*chargeSec - 1, n: 1, want: Decision{RetryAfter: time.Microsecond, ResetAfter: 9*time.Second + time.Microsecond}},
	})
	rsv := st.(*leakyBucketState).CloneState()
	runChargeSteps(t, a, rsv, []chargeStep{
		{now: chargeT0 + 16*chargeSec, n: 1, maxWait: Forever, want: Decision{Allowed: true, Remaining: 0,
			ResetAfter: 10 * time.Second, Wait: 9 * time.Second, At: chargeT0 + 25*chargeSec}},
	})
	runChargeSteps(t, a, st, []chargeStep{
		{now: chargeT0 + 16*chargeSec, n: 1, want: Decision{Allowed: true, Remaining: 0, ResetAfter: 10 * time.Second, At: chargeT0 + 16*chargeSec}},
		{now: chargeT0 + 26*chargeSec, n: 10, want: Decision{Allowed: true, Remaining: 0, ResetAfter: 10 * time.Second, At: chargeT0 + 26*chargeSec}},
	})
}

// TestLeakyBucketChargeWithinCapacity and behind the clock: a charge that fits pours what
// AllowN pours; one at t0 - 1 s on a state written at t0 is decided at t0 (the level does
// not drain backwards) and its durations count the second from the caller.
func TestLeakyBucketChargeWithinCapacity(t *testing.T) {
	a := LeakyBucket{Rate: 1, Capacity: 10}
	runChargeSteps(t, a, a.NewState(), []chargeStep{
		{now: chargeT0, n: 4, charge: true, want: Decision{Allowed: true, Remaining: 6, ResetAfter: 4 * time.Second, At: chargeT0}},
		{now: chargeT0, n: 6, charge: true, want: Decision{Allowed: true, Remaining: 0, RetryAfter: time.Second, ResetAfter: 10 * time.Second, At: chargeT0}},
		{now: chargeT0 - chargeSec, n: 15, charge: true, want: Decision{Allowed: true, Remaining: 0,
			RetryAfter: 17 * time.Second, ResetAfter: 26 * time.Second, At: chargeT0}},
		{now: chargeT0 + 16*chargeSec - 1, n: 1, want: Decision{RetryAfter: time.Microsecond, ResetAfter: 9*time.Second + time.Microsecond}},
		{now: chargeT0 + 16*chargeSec, n: 1, want: Decision{Allowed: true, Remaining: 0, ResetAfter: 10 * time.Second, At: chargeT0 + 16*chargeSec}},
	})
}

// TestLeakyBucketChargeHuge: charges of 2^53 on a Capacity of 2^53 take the level past 2^63
// (no int64 holds it); it is still 0 Remaining and Never, in Go as in Lua
// (TestLuaBucketChargeHuge).
func TestLeakyBucketChargeHuge(t *testing.T) {
	a := LeakyBucket{Rate: 1, Capacity: maxExact}
	st := a.NewState()
	for i := 0; i < 1100; i++ {
		a.Apply(st, chargeT0, Request{N: maxExact, Charge: true})
	}
	require.Greater(t, st.(*leakyBucketState).level, float64(math.MaxInt64))
	d := a.Apply(st, chargeT0, Request{N: 1, Charge: true})
	assert.Equal(t, Decision{Allowed: true, Limit: maxExact, RetryAfter: Never, ResetAfter: Never, At: chargeT0}, d)
	assert.Equal(t, int64(0), a.remaining(st.(*leakyBucketState).level))
}

// TestChargeBucketsRefundBefore: a charge moves no grant's instant (act), so a refund of a
// grant made before it gives back that grant's permits, no more and no less, and the debt
// charged stays. Rate 1, size 10: 5 granted at t0, 20 charged, the 5 refunded at t0 + 1 s
// leave 20 used (TAT t0 + 20 s; level 24 - 5 = 19): one permit in 10 s.
func TestChargeBucketsRefundBefore(t *testing.T) {
	for _, a := range []Algorithm{GCRA{Rate: 1, Burst: 10}, LeakyBucket{Rate: 1, Capacity: 10}} {
		st := a.NewState()
		runChargeSteps(t, a, st, []chargeStep{
			{now: chargeT0, n: 5, want: Decision{Allowed: true, Remaining: 5, ResetAfter: 5 * time.Second, At: chargeT0}},
			{now: chargeT0, n: 20, charge: true, want: Decision{Allowed: true, Remaining: 0,
				RetryAfter: 16 * time.Second, ResetAfter: 25 * time.Second, At: chargeT0}},
		})
		a.Refund(st, chargeT0+chargeSec, 5, chargeT0)
		runChargeSteps(t, a, st, []chargeStep{
			{now: chargeT0 + chargeSec, n: 1, want: Decision{RetryAfter: 10 * time.Second, ResetAfter: 19 * time.Second}},
		})
	}
}

// chargeConfigs are the GCRA and LeakyBucket configs of the charge property test: the
// samples and random ones, rates from 1e-3 to 1e6 per second, sizes from 1 to 2^53.
func chargeConfigs(r *rand.Rand) []Algorithm {
	var cs []Algorithm
	for _, a := range Samples() {
		switch a.(type) {
		case GCRA, LeakyBucket:
			cs = append(cs, a)
		}
	}
	sizes := []int64{1, 2, 3, 10, 1000, 1 << 30, maxExact}
	for len(cs) < 40 {
		rate, size := math.Exp(r.Float64()*21-7), sizes[r.Intn(len(sizes))]
		for _, a := range []Algorithm{GCRA{Rate: rate, Burst: size}, LeakyBucket{Rate: rate, Capacity: size}} {
			if a.Validate() == nil {
				cs = append(cs, a)
			}
		}
	}
	return cs
}

// chargeSibling is a at another rate (a key's rule changed), or a when that is not valid.
func chargeSibling(a Algorithm, r *rand.Rand) Algorithm {
	f := []float64{0.5, 2, 3}[r.Intn(3)]
	var b Algorithm
	switch c := a.(type) {
	case GCRA:
		b = GCRA{Rate: c.Rate * f, Burst: c.Burst}
	case LeakyBucket:
		b = LeakyBucket{Rate: c.Rate * f, Capacity: c.Capacity}
	}
	if b.Validate() != nil {
		return a
	}
	return b
}

// TestChargeBucketsRetryAfter is the property of a charge's Decision on random histories
// (grants, reservations, charges, the clock going back, the rate changing): it is Allowed
// with Wait 0; until its RetryAfter every request with MaxWait 0 is denied, and one with
// a MaxWait acts no earlier than RetryAfter (the leaky bucket's is denied: its queue is
// full); at RetryAfter one permit is granted; Remaining is 0 while RetryAfter > 0, and
// otherwise a request for Remaining is granted and one for Remaining+1 denied; at
// ResetAfter the whole limit is.
func TestChargeBucketsRetryAfter(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(36))
	charges, inDebt := 0, 0
	for ci, base := range chargeConfigs(r) {
		q := chargeQuota(base).Window / time.Microsecond
		scale := max(1, min(int64(q), 1e12))
		for seed := 0; seed < 20; seed++ {
			cfgs := []Algorithm{base, chargeSibling(base, r)}
			st, now := base.NewState(), chargeT0
			if seed%2 == 1 {
				now = r.Int63n(4*scale) - 2*scale // around the epoch, both sides
			}
			for step := 0; step < 30; step++ {
				a := cfgs[0]
				if r.Intn(4) == 0 {
					a = cfgs[1]
				}
				limit := chargeQuota(a).Limit
				now += r.Int63n(scale/2+1) - scale/20
				n := 1 + r.Int63n(limit)
				var req Request
				switch r.Intn(4) {
				case 0: // up to 3 times the limit, or (one in three) up to the limit
					size := min(3*limit, maxExact)
					if r.Intn(3) == 0 {
						size = limit
					}
					req = Request{N: 1 + r.Int63n(size), Charge: true}
				case 1:
					req = Request{N: n, MaxWait: time.Duration(r.Int63n(2*scale)) * time.Microsecond}
				default:
					req = Request{N: n}
				}
				before := st.(StateCloner).CloneState()
				d := a.Apply(st, now, req)
				if !req.Charge {
					continue
				}
				charges++
				where := fmt.Sprintf("config %d %v, seed %d step %d: charge %d at %d after %+v -> %+v", ci, a, seed, step, req.N, now, before, d)
				checkChargeDecision(t, a, st, now, d, r, where)
				if d.RetryAfter > 0 {
					inDebt++
				}
			}
		}
	}
	t.Logf("%d charges checked, %d left the key in debt", charges, inDebt)
	require.Greater(t, inDebt, charges/4, "too few charges in debt to test the property")
	require.Less(t, inDebt, charges, "no charge left a permit")
}

// checkChargeDecision checks d, the Decision of a charge at now that left st (see
// TestChargeBucketsRetryAfter), by requests on copies of st.
func checkChargeDecision(t *testing.T, a Algorithm, st State, now int64, d Decision, r *rand.Rand, where string) {
	t.Helper()
	limit := chargeQuota(a).Limit
	_, leaky := a.(LeakyBucket)
	try := func(at int64, req Request) Decision {
		return a.Apply(st.(StateCloner).CloneState(), at, req)
	}
	require.True(t, d.Allowed, where)
	require.Equal(t, limit, d.Limit, where)
	require.Zero(t, d.Wait, where)
	retry := usOf(d.RetryAfter)
	if d.RetryAfter == Never {
		retry = MaxMicros
	}
	if retry > 0 {
		require.Zero(t, d.Remaining, where)
		probes := []int64{0, retry - 1, r.Int63n(retry)}
		if retry == MaxMicros {
			probes = append(probes, MaxMicros/2)
		}
		for _, p := range probes {
			n := 1 + r.Int63n(limit)
			require.False(t, try(now+p, Request{N: n}).Allowed, "%s: N=%d granted %d µs after", where, n, p)
			one := try(now+p, Request{N: 1, MaxWait: Forever})
			if leaky {
				require.False(t, one.Allowed, "%s: the leaky bucket's full queue granted a reservation %d µs after", where, p)
			} else if one.Allowed {
				require.GreaterOrEqual(t, one.At, now+retry, "%s: a reservation %d µs after acts before RetryAfter", where, p)
			}
		}
	}
	if retry < MaxMicros {
		require.True(t, try(now+retry, Request{N: 1}).Allowed, "%s: one permit denied at RetryAfter", where)
	}
	if rem := d.Remaining; rem > 0 {
		require.True(t, try(now, Request{N: rem}).Allowed, "%s: Remaining denied", where)
		if rem < limit {
			require.False(t, try(now, Request{N: rem + 1}).Allowed, "%s: Remaining+1 granted", where)
		}
	}
	if d.ResetAfter != Never {
		require.True(t, try(now+usOf(d.ResetAfter), Request{N: limit}).Allowed, "%s: the whole limit denied at ResetAfter", where)
	}
}

// TestLuaBucketChargeHuge compares the Go and Lua charges of the buckets (the token bucket
// too) where the differential test's charges (up to three times the limit) never go:
// charges of 2^53, a GCRA TAT at its cap, a leaky level past 2^63, large intervals, a
// clock going back, with the requests after them. Replies and stored states must be
// identical.
func TestLuaBucketChargeHuge(t *testing.T) {
	t.Parallel()
	rdb := redistest.WithoutExpiry(newRedisClient(t, startRedis(t), 3)) // fake instants: see redistest.WithoutExpiry
	type call struct {
		now int64
		req Request
	}
	huge := Request{N: maxExact, Charge: true}
	seq := []call{
		{chargeT0, Request{N: 1}},
		{chargeT0, huge},
		{chargeT0, Request{N: 1}},
		{chargeT0, Request{N: 1, MaxWait: Forever}},
		{chargeT0 + 1, huge},
		{chargeT0 - chargeSec, Request{N: 3, Charge: true}},
		{chargeT0 + MaxMicros/2, Request{N: 1}},
		{chargeT0 + MaxMicros + 7, Request{N: 1, Charge: true}},
		{chargeT0 + 3*MaxMicros/2, Request{N: 1, MaxWait: time.Hour}},
		{chargeT0 + 3*MaxMicros/2, Request{N: 2, Charge: true}},
	}
	for _, a := range []Scripted{
		GCRA{Rate: 1, Burst: 10},
		GCRA{Rate: 1e6, Burst: MaxMicros},
		GCRA{Rate: 1e-9, Burst: 1},
		GCRA{Rate: 3, Burst: 7},
		LeakyBucket{Rate: 1, Capacity: 10},
		LeakyBucket{Rate: 1e9, Capacity: maxExact},
		LeakyBucket{Rate: 1e-9, Capacity: 1},
		LeakyBucket{Rate: 1e6 / 7, Capacity: 3},
		TokenBucket{Rate: 1, Burst: 10},
		TokenBucket{Rate: 1e9, Burst: maxExact},
	} {
		name := fmt.Sprint(a)
		calls := seq
		if lb, ok := a.(LeakyBucket); ok && lb.Capacity == maxExact {
			calls = nil // past 2^63: 1100 charges of 2^53, then the sequence
			for i := 0; i < 1100; i++ {
				calls = append(calls, call{chargeT0, huge})
			}
			calls = append(calls, seq...)
		}
		t.Run(name, func(t *testing.T) {
			runChargeCalls(t, rdb, a, name, len(calls), func(i int) (int64, Request) { return calls[i].now, calls[i].req })
		})
	}
}

// runChargeCalls runs count calls (now and request of each from call) through a's Go
// transition and its Lua twin on a fresh key, and requires the same replies and, after
// every call, the same stored state.
func runChargeCalls(t *testing.T, rdb *redis.Client, a Scripted, name string, count int, call func(i int) (int64, Request)) {
	t.Helper()
	ctx := context.Background()
	var tw luaTwin
	for _, x := range luaTwins {
		if x.name == a.Name() {
			tw = x
		}
	}
	require.NotEmpty(t, tw.name, "no luaTwin for %s", a.Name())
	keys := scriptKeys(a.Script(), "{charge}:"+name)
	rs := redis.NewScript(a.Script().Source)
	st := a.NewState()
	for i := 0; i < count; i++ {
		now, req := call(i)
		want := a.Apply(st, now, req)
		v, err := rs.Run(ctx, rdb, keys, applyArgs(a, now, req)...).Result()
		require.NoError(t, err, "call %d", i)
		got, err := decisionOf(v)
		require.NoError(t, err, "call %d", i)
		require.Equal(t, want, got, "call %d at %d %+v: Lua reply %v", i, now, req, v)
		h, err := readState(ctx, rdb, keys[0])
		require.NoError(t, err)
		stored, err := tw.stored(h, nil)
		require.NoError(t, err)
		require.Equal(t, tw.snap(st), stored, "call %d at %d %+v: stored state", i, now, req)
	}
}
