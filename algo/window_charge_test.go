package algo

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/ratekit/limiter/internal/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Charges of the window algorithms (issue 36): what debt means for each, with exact
// figures, the property every charge's Decision keeps, and the sliding log's compaction.

// Instants in µs: w0 is the start of a minute-long window (and of a second-long one).
const (
	msec int64 = 1000
	sec  int64 = 1_000_000
	w0         = int64(29_500_000) * 60_000_000
)

// chargeOf charges n at now.
func chargeOf(a Algorithm, st State, now, n int64) Decision {
	return a.Apply(st, now, Request{N: n, Charge: true})
}

// allow asks for n at now with no wait.
func allow(a Algorithm, st State, now, n int64) Decision {
	return a.Apply(st, now, Request{N: n})
}

// TestChargeFixedWindow: FixedWindow{Limit: 10, Window: 1m}, 5 taken, a charge of 20: the
// window counts 25, every request is denied for the rest of it, and the next starts fresh.
func TestChargeFixedWindow(t *testing.T) {
	t.Parallel()
	a := FixedWindow{Limit: 10, Window: time.Minute}
	st := a.NewState()
	require.True(t, allow(a, st, w0+10*sec, 5).Allowed)

	d := chargeOf(a, st, w0+20*sec, 20)
	assert.Equal(t, Decision{Allowed: true, Limit: 10, Remaining: 0, RetryAfter: 40 * time.Second,
		ResetAfter: 40 * time.Second, At: w0 + 20*sec}, d)
	assert.Equal(t, fixedWindowState{valid: true, win: w0 / (60 * sec), count: 25}, *st.(*fixedWindowState))

	assert.Equal(t, Decision{Limit: 10, RetryAfter: time.Microsecond, ResetAfter: time.Microsecond},
		allow(a, st, w0+60*sec-1, 1), "one µs before the next window")
	assert.Equal(t, Decision{Allowed: true, Limit: 10, Remaining: 0, ResetAfter: time.Minute, At: w0 + 60*sec},
		allow(a, st, w0+60*sec, 10), "the next window starts fresh")
}

// TestChargeFixedWindowCases: a charge that fits is a grant; one made while a reservation
// waits for the next window counts there (At is that window's start, where a refund finds
// it); a window counts at most 2^53.
func TestChargeFixedWindowCases(t *testing.T) {
	t.Parallel()
	a := FixedWindow{Limit: 10, Window: time.Minute}

	st := a.NewState()
	allow(a, st, w0+10*sec, 5)
	assert.Equal(t, Decision{Allowed: true, Limit: 10, Remaining: 2, ResetAfter: 50 * time.Second, At: w0 + 10*sec},
		chargeOf(a, st, w0+10*sec, 3), "within what is left")

	st = a.NewState()
	allow(a, st, w0+10*sec, 10)
	r := a.Apply(st, w0+20*sec, Request{N: 4, MaxWait: time.Minute})
	require.Equal(t, w0+60*sec, r.At, "a reservation in the next window")
	d := chargeOf(a, st, w0+30*sec, 8)
	assert.Equal(t, Decision{Allowed: true, Limit: 10, Remaining: 0, RetryAfter: 90 * time.Second,
		ResetAfter: 90 * time.Second, At: w0 + 60*sec}, d, "counted beside the reservation: 12 in the next window")
	a.Refund(st, w0+40*sec, 8, d.At)
	assert.Equal(t, Decision{Allowed: true, Limit: 10, Remaining: 0, ResetAfter: time.Minute, At: w0 + 60*sec},
		allow(a, st, w0+60*sec, 6), "the charge refunded at its At: 4 + 6 fit")

	big := FixedWindow{Limit: maxExact, Window: time.Second}
	st = big.NewState()
	chargeOf(big, st, w0, maxExact)
	d = chargeOf(big, st, w0+1, maxExact)
	assert.Equal(t, int64(maxExact), st.(*fixedWindowState).count, "capped at 2^53")
	assert.Equal(t, Decision{Allowed: true, Limit: maxExact, RetryAfter: time.Second - time.Microsecond,
		ResetAfter: time.Second - time.Microsecond, At: w0 + 1}, d)
}

// TestChargeSlidingWindowCounter: SlidingWindowCounter{Limit: 10, Window: 1m}, 5 taken, a
// charge of 20: 25 in the window, weighing 25·(1 - f) as f of the next window passes; one
// permit fits when that weighs 9, 38.4 s into it.
func TestChargeSlidingWindowCounter(t *testing.T) {
	t.Parallel()
	a := SlidingWindowCounter{Limit: 10, Window: time.Minute}
	st := a.NewState()
	require.True(t, allow(a, st, w0+10*sec, 5).Allowed)

	d := chargeOf(a, st, w0+20*sec, 20)
	assert.Equal(t, Decision{Allowed: true, Limit: 10, Remaining: 0, RetryAfter: 78400 * time.Millisecond,
		ResetAfter: 100 * time.Second, At: w0 + 20*sec}, d)

	at := w0 + 98400*msec
	assert.Equal(t, Decision{Limit: 10, RetryAfter: time.Microsecond, ResetAfter: 21600*time.Millisecond + time.Microsecond},
		allow(a, st, at-1, 1), "one µs before")
	assert.Equal(t, Decision{Allowed: true, Limit: 10, Remaining: 0, ResetAfter: 81600 * time.Millisecond, At: at},
		allow(a, st, at, 1))
	// At 2 min the charge has slid out: only the permit taken at 98.4 s weighs.
	assert.Equal(t, Decision{Allowed: true, Limit: 10, Remaining: 0, ResetAfter: 2 * time.Minute, At: w0 + 120*sec},
		allow(a, st, w0+120*sec, 9))

	// A charge that fits is a grant.
	st = a.NewState()
	assert.Equal(t, Decision{Allowed: true, Limit: 10, Remaining: 7, ResetAfter: 110 * time.Second, At: w0 + 10*sec},
		chargeOf(a, st, w0+10*sec, 3))
}

// TestChargeSlidingWindowCounterCases: a charge made while a reservation waits in the next
// window counts there (At is that window's start, where a refund finds it); a window
// counts at most 2^53.
func TestChargeSlidingWindowCounterCases(t *testing.T) {
	t.Parallel()
	a := SlidingWindowCounter{Limit: 10, Window: time.Minute}
	st := a.NewState()
	allow(a, st, w0+10*sec, 10)
	r := a.Apply(st, w0+20*sec, Request{N: 4, MaxWait: 2 * time.Minute})
	require.Equal(t, w0+84*sec, r.At, "10·(1 - 24/60) + 4 = 10")
	d := chargeOf(a, st, w0+30*sec, 8)
	// 12 in the next window: one permit fits in the one after once 12·(1 - f) ≤ 9, f = 1/4.
	assert.Equal(t, Decision{Allowed: true, Limit: 10, Remaining: 0, RetryAfter: 105 * time.Second,
		ResetAfter: 150 * time.Second, At: w0 + 60*sec}, d)
	assert.False(t, allow(a, st.(StateCloner).CloneState(), w0+90*sec, 1).Allowed, "not refunded: 12 weigh")
	a.Refund(st, w0+40*sec, 8, d.At)
	// Refunded: 10·(1 - 1/2) + 4 + 1 = 10 at 90 s.
	assert.Equal(t, Decision{Allowed: true, Limit: 10, Remaining: 0, ResetAfter: 90 * time.Second, At: w0 + 90*sec},
		allow(a, st, w0+90*sec, 1))

	big := SlidingWindowCounter{Limit: maxExact, Window: time.Second}
	st = big.NewState()
	chargeOf(big, st, w0, maxExact)
	d = chargeOf(big, st, w0+1, maxExact)
	assert.Equal(t, int64(maxExact), st.(*slidingCounterState).curr, "capped at 2^53")
	assert.Equal(t, Decision{Allowed: true, Limit: maxExact, RetryAfter: time.Second,
		ResetAfter: 2*time.Second - time.Microsecond, At: w0 + 1}, d, "2^53·(1 - f) ≤ 2^53 - 1 from 1 µs into the next window")
}

// TestChargeSlidingWindowLog: SlidingWindowLog{Limit: 10, Window: 1m}: 5 taken at 10 s
// and a charge of 7 at 20 s leave each on its own, each leaving the window a minute after
// it was logged; a charge of 20 at 20 s is alone over the limit, so nothing is granted
// until it has left, at 80 s, and the log keeps a single entry.
func TestChargeSlidingWindowLog(t *testing.T) {
	t.Parallel()
	a := SlidingWindowLog{Limit: 10, Window: time.Minute}
	st := a.NewState()
	allow(a, st, w0+10*sec, 5)
	d := chargeOf(a, st, w0+20*sec, 7)
	assert.Equal(t, Decision{Allowed: true, Limit: 10, Remaining: 0, RetryAfter: 50 * time.Second,
		ResetAfter: time.Minute, At: w0 + 20*sec}, d, "12 logged: one permit once the 5 have left")
	assert.Equal(t, []logEntry{{w0 + 10*sec, 5}, {w0 + 20*sec, 7}}, st.(*slidingLogState).entries)
	assert.False(t, allow(a, st, w0+70*sec-1, 1).Allowed)
	assert.Equal(t, Decision{Allowed: true, Limit: 10, Remaining: 0, ResetAfter: time.Minute, At: w0 + 70*sec},
		allow(a, st, w0+70*sec, 3), "the 5 have left: 7 + 3")
	assert.Equal(t, Decision{Allowed: true, Limit: 10, Remaining: 4, ResetAfter: time.Minute, At: w0 + 80*sec},
		allow(a, st, w0+80*sec, 3), "the charge has left the window: 3 + 3")

	for _, n := range []int64{20, 10} { // a charge of Limit or more is alone over the limit
		st = a.NewState()
		allow(a, st, w0+10*sec, 5)
		d = chargeOf(a, st, w0+20*sec, n)
		assert.Equal(t, Decision{Allowed: true, Limit: 10, Remaining: 0, RetryAfter: time.Minute,
			ResetAfter: time.Minute, At: w0 + 20*sec}, d)
		s := st.(*slidingLogState)
		assert.Equal(t, []logEntry{{w0 + 20*sec, 5 + n}}, s.entries[s.head:], "the 5 merged into the charge of %d", n)
		assert.Equal(t, 5+n, s.total)
		assert.Equal(t, Decision{Limit: 10, RetryAfter: time.Microsecond, ResetAfter: time.Microsecond},
			allow(a, st, w0+80*sec-1, 1))
		assert.Equal(t, Decision{Allowed: true, Limit: 10, Remaining: 0, ResetAfter: time.Minute, At: w0 + 80*sec},
			allow(a, st, w0+80*sec, 10))
	}

	// The log holds at most 2^53 permits.
	big := SlidingWindowLog{Limit: maxExact, Window: time.Second}
	st = big.NewState()
	chargeOf(big, st, w0, maxExact-3)
	d = chargeOf(big, st, w0+1, 10)
	assert.Equal(t, int64(maxExact), st.(*slidingLogState).total)
	assert.Equal(t, []logEntry{{w0, maxExact - 3}, {w0 + 1, 3}}, st.(*slidingLogState).entries)
	assert.Equal(t, Decision{Allowed: true, Limit: maxExact, RetryAfter: time.Second - time.Microsecond,
		ResetAfter: time.Second, At: w0 + 1}, d, "one permit once the first entry has left")
}

// TestChargeSlidingLogBounded: a stream of small charges, one per µs, keeps the log at
// most Limit + 1 entries long, however long the window.
func TestChargeSlidingLogBounded(t *testing.T) {
	t.Parallel()
	a := SlidingWindowLog{Limit: 3, Window: time.Hour}
	st := a.NewState()
	for i := int64(0); i < 10_000; i++ {
		d := chargeOf(a, st, w0+i, 1+i%2)
		require.True(t, d.Allowed)
		s := st.(*slidingLogState)
		require.LessOrEqual(t, len(s.entries)-s.head, 4, "after %d charges", i+1)
	}
	s := st.(*slidingLogState)
	assert.Equal(t, int64(15_000), s.total)
	assert.LessOrEqual(t, len(s.entries), 64, "the backing array is reused")
}

// TestChargeSlidingLogCompactionChangesNoDecision drives a log and a reference that logs
// every charge on its own (never compacted) through random grants, reservations, charges
// and clock steps (backwards too): every request is decided alike, and every charge's
// RetryAfter is what a request for one permit right after it is told.
func TestChargeSlidingLogCompactionChangesNoDecision(t *testing.T) {
	t.Parallel()
	for seed := int64(1); seed <= 200; seed++ {
		r := rand.New(rand.NewSource(seed))
		a := SlidingWindowLog{Limit: 1 + r.Int63n(12), Window: time.Duration(1+r.Int63n(5000)) * time.Microsecond}
		w := int64(a.Window / time.Microsecond)
		st, ref := &slidingLogState{}, &slidingLogState{}
		now, compacted := w0+r.Int63n(w), 0
		for step := 0; step < 300; step++ {
			now += r.Int63n(w/3+1) - w/20
			if r.Intn(3) == 0 {
				n := 1 + r.Int63n(2*a.Limit)
				d := chargeOf(a, st, now, n)
				refCharge(a, ref, now, n)
				one := allow(a, ref.CloneState(), now, 1)
				require.Equal(t, one.RetryAfter, d.RetryAfter, "seed %d step %d: a charge's RetryAfter", seed, step)
				if len(st.entries)-st.head < len(ref.entries)-ref.head {
					compacted++
				}
				continue
			}
			req := Request{N: 1 + r.Int63n(a.Limit)}
			if r.Intn(3) == 0 {
				req.MaxWait = time.Duration(r.Int63n(2*w)) * time.Microsecond
			}
			got, want := a.Apply(st, now, req), a.Apply(ref, now, req)
			require.Equal(t, want, got, "seed %d step %d: %+v at %d", seed, step, req, now)
		}
		require.Positive(t, compacted, "seed %d: the log was never compacted", seed)
	}
}

// refCharge logs n on s as charge does, without compact.
func refCharge(a SlidingWindowLog, s *slidingLogState, now, n int64) {
	head, total := a.live(s, now)
	at := grantFloor(s.entries[head:], now)
	n = min(n, maxExact-total)
	s.drop(head, total)
	if k := len(s.entries); k > s.head && s.entries[k-1].t == at {
		s.entries[k-1].n += n
	} else {
		s.entries = append(s.entries, logEntry{t: at, n: n})
	}
	s.total += n
}

// TestChargeRetryAfterIsExact: after any charge, on random histories of each window
// algorithm, a request with no wait is denied at every instant before the Decision's
// RetryAfter (probed at its last µs and at random ones) and a request for one permit is
// granted at it; Remaining is what can be taken right after, 0 exactly when RetryAfter is
// not; ResetAfter is the state's (a later instant decides as a fresh state).
func TestChargeRetryAfterIsExact(t *testing.T) {
	t.Parallel()
	kinds := []func(limit int64, w time.Duration) Algorithm{
		func(l int64, w time.Duration) Algorithm { return FixedWindow{Limit: l, Window: w} },
		func(l int64, w time.Duration) Algorithm { return SlidingWindowLog{Limit: l, Window: w} },
		func(l int64, w time.Duration) Algorithm { return SlidingWindowCounter{Limit: l, Window: w} },
	}
	for _, mk := range kinds {
		t.Run(mk(1, time.Second).Name(), func(t *testing.T) {
			t.Parallel()
			charges := 0
			for seed := int64(1); seed <= 60; seed++ {
				r := rand.New(rand.NewSource(seed))
				limit := 1 + r.Int63n(40)
				a := mk(limit, time.Duration(1+r.Int63n(2_000_000))*time.Microsecond)
				w := int64(a.(interface{ quota() Quota }).quota().Window / time.Microsecond)
				st := a.NewState()
				now := w0 + r.Int63n(4*w) - 2*w
				for step := 0; step < 200; step++ {
					now += r.Int63n(w/2+1) - w/10 // backwards now and then
					if r.Intn(3) != 0 {
						req := Request{N: 1 + r.Int63n(limit)}
						if r.Intn(4) == 0 {
							req.MaxWait = time.Duration(r.Int63n(3*w)) * time.Microsecond
						}
						a.Apply(st, now, req)
						continue
					}
					n := 1 + r.Int63n(3*limit)
					d := chargeOf(a, st, now, n)
					charges++
					where := fmt.Sprintf("%v seed %d step %d: charge %d at %d: %+v", a, seed, step, n, now, d)
					checkCharge(t, a, st, now, d, where, r)
				}
			}
			t.Logf("%d charges probed", charges)
		})
	}
}

// checkCharge checks the Decision d of a charge at now, st being the state it left.
func checkCharge(t *testing.T, a Algorithm, st State, now int64, d Decision, where string, r *rand.Rand) {
	t.Helper()
	require.True(t, d.Allowed, where)
	require.Zero(t, d.Wait, where)
	require.GreaterOrEqual(t, d.At, now, where)
	require.Positive(t, d.ResetAfter, where)
	require.Equal(t, d.Remaining == 0, d.RetryAfter > 0, "%s: Remaining 0 exactly while RetryAfter", where)
	probe := func(at, n int64) Decision { return a.Apply(st.(StateCloner).CloneState(), at, Request{N: n}) }
	if d.Remaining > 0 {
		require.True(t, probe(now, d.Remaining).Allowed, "%s: Remaining taken right after", where)
	}
	if d.Remaining < limitOfQuota(a) {
		require.False(t, probe(now, d.Remaining+1).Allowed, "%s: Remaining+1 right after", where)
	}
	require.NotEqual(t, Never, d.RetryAfter, where) // windows end within 2 windows
	retry := int64(d.RetryAfter / time.Microsecond)
	if retry > 0 {
		for _, off := range []int64{0, retry - 1, r.Int63n(retry), r.Int63n(retry)} {
			p := probe(now+off, 1)
			require.False(t, p.Allowed, "%s: one permit %d µs after the charge", where, off)
			require.Equal(t, retry-off, int64(p.RetryAfter/time.Microsecond), "%s: the denial's RetryAfter %d µs after", where, off)
		}
	}
	require.True(t, probe(now+retry, 1).Allowed, "%s: one permit at RetryAfter", where)
	reset := now + int64(d.ResetAfter/time.Microsecond)
	require.True(t, probe(reset, limitOfQuota(a)).Allowed, "%s: fresh at ResetAfter", where)
}

// limitOfQuota is the Limit of a window algorithm.
func limitOfQuota(a Algorithm) int64 { return a.(interface{ quota() Quota }).quota().Limit }

// TestLuaChargeReadsOldKeys: a key that an earlier version wrote as a hash (the fixed
// window's and the sliding counter's; the sliding log's format is unchanged) is charged by
// the new script as the Go twin charges the state it holds, and rewritten packed.
func TestLuaChargeReadsOldKeys(t *testing.T) {
	t.Parallel()
	rdb := redistest.WithoutExpiry(newRedisClient(t, startRedis(t), 3)) // fake instants
	ctx := context.Background()
	for _, tw := range luaTwins {
		if tw.name != (FixedWindow{}).Name() && tw.name != (SlidingWindowCounter{}).Name() {
			continue
		}
		old := redis.NewScript(hashFormatSource(t, tw.name))
		for seed := int64(0); seed < 30; seed++ {
			r := rand.New(rand.NewSource(seed))
			a := tw.family(r)[0]
			key := fmt.Sprintf("{charge-old}:%s:%d", tw.name, seed)
			st, scale := a.NewState(), tw.scale(a)
			now := int64(1_700_000_000_000_000) + r.Int63n(1e12)
			for i := 0; i < 1+r.Intn(5); i++ {
				now += r.Int63n(scale/3 + 1)
				req := Request{N: 1 + r.Int63n(min(tw.limit(a), 4))}
				a.Apply(st, now, req)
				require.NoError(t, old.Run(ctx, rdb, []string{key}, applyArgs(a, now, req)...).Err())
			}
			require.Equal(t, "hash", rdb.Type(ctx, key).Val(), "seed %d: the old script wrote a hash", seed)
			now += r.Int63n(scale/3 + 1)
			req := Request{N: 1 + r.Int63n(min(3*tw.limit(a), maxExact-1)), Charge: true}
			want := a.Apply(st, now, req)
			v, err := redis.NewScript(a.Script().Source).Run(ctx, rdb, []string{key}, applyArgs(a, now, req)...).Result()
			require.NoError(t, err)
			got, err := decisionOf(v)
			require.NoError(t, err)
			require.Equal(t, want, got, "seed %d: %v charged %d at %d", seed, a, req.N, now)
			require.Equal(t, "string", rdb.Type(ctx, key).Val(), "seed %d: rewritten packed", seed)
			h, err := readState(ctx, rdb, key)
			require.NoError(t, err)
			stored, err := tw.stored(h, nil)
			require.NoError(t, err)
			require.Equal(t, tw.snap(st), stored, "seed %d", seed)
		}
	}
}
