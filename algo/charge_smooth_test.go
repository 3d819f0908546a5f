package algo_test

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Charges of the smooth algorithms (issue 36): Guava's acquire(N) without the charging
// caller's wait. Stored permits are spent first; the rest pushes nextFreeTicket, which is
// the wait of the next caller.

// chargeStep is one call of a charge table: a Charge of n when charge is set, else a
// request of n with MaxWait 0; want is compared whole.
type chargeStep struct {
	now    int64
	n      int64
	charge bool
	want   algo.Decision
}

func runCharges(t *testing.T, a algo.Algorithm, steps []chargeStep) {
	t.Helper()
	st := a.NewState()
	for i, s := range steps {
		got := a.Apply(st, s.now, algo.Request{N: s.n, Charge: s.charge})
		require.Equal(t, s.want, got, "%v step %d: now %d, N %d, charge %v", a, i, s.now, s.n, s.charge)
	}
}

func TestChargeSmoothBursty(t *testing.T) {
	t.Parallel()
	// 1/s, up to 10 stored permits (10 s to refill from empty), kept a minute once full.
	a := algo.SmoothBursty{Rate: 1, MaxBurstSeconds: 10}
	t0, s := today, sec
	d := func(x int64) time.Duration { return time.Duration(x) * time.Microsecond }
	t.Run("debt", func(t *testing.T) {
		runCharges(t, a, []chargeStep{
			{t0, 1, false, algo.Decision{Allowed: true, Limit: 10, ResetAfter: 11*time.Second + linger, At: t0}},
			// 5 s idle after the 1 s the first request cost: 5 stored permits. A charge of
			// 20 spends them free and the other 15 push the next permit 15 s away.
			{t0 + 6*s, 20, true, algo.Decision{Allowed: true, Limit: 10, RetryAfter: 15 * time.Second,
				ResetAfter: 25*time.Second + linger, At: t0 + 6*s}},
			{t0 + 21*s - 1, 1, false, algo.Decision{Limit: 10, RetryAfter: d(1), ResetAfter: 10*time.Second + d(1) + linger}},
			{t0 + 21*s, 1, false, algo.Decision{Allowed: true, Limit: 10, ResetAfter: 11*time.Second + linger, At: t0 + 21*s}},
		})
	})
	t.Run("new key", func(t *testing.T) {
		// A new key is empty: a charge of 20 is 20 s of debt.
		runCharges(t, a, []chargeStep{
			{t0, 20, true, algo.Decision{Allowed: true, Limit: 10, RetryAfter: 20 * time.Second,
				ResetAfter: 30*time.Second + linger, At: t0}},
		})
	})
	t.Run("within stored", func(t *testing.T) {
		// 3 of the 5 stored permits: free, no debt, 2 left.
		runCharges(t, a, []chargeStep{
			{t0, 1, false, algo.Decision{Allowed: true, Limit: 10, ResetAfter: 11*time.Second + linger, At: t0}},
			{t0 + 6*s, 3, true, algo.Decision{Allowed: true, Limit: 10, Remaining: 2, ResetAfter: 8*time.Second + linger, At: t0 + 6*s}},
			{t0 + 6*s, 2, false, algo.Decision{Allowed: true, Limit: 10, ResetAfter: 10*time.Second + linger, At: t0 + 6*s}},
		})
	})
	t.Run("pending", func(t *testing.T) {
		// The first request's 1 s is pending: the charge waits for none of it (an
		// acquire(4) would wait 1 s) and the next caller pays both: 5 s.
		runCharges(t, a, []chargeStep{
			{t0, 1, false, algo.Decision{Allowed: true, Limit: 10, ResetAfter: 11*time.Second + linger, At: t0}},
			{t0, 4, true, algo.Decision{Allowed: true, Limit: 10, RetryAfter: 5 * time.Second,
				ResetAfter: 15*time.Second + linger, At: t0}},
			{t0 + 5*s - 1, 1, false, algo.Decision{Limit: 10, RetryAfter: d(1), ResetAfter: 10*time.Second + d(1) + linger}},
		})
	})
	t.Run("saturated", func(t *testing.T) {
		// One permit per 31.7 million years: the debt of one is beyond MaxMicros.
		runCharges(t, algo.SmoothBursty{Rate: 1e-15}, []chargeStep{
			{t0, 1, true, algo.Decision{Allowed: true, Limit: 1, RetryAfter: algo.Never, ResetAfter: algo.Never, At: t0}},
			{t0 + 1e12, 1, false, algo.Decision{Limit: 1, RetryAfter: d(algo.MaxMicros - 1e12),
				ResetAfter: d(algo.MaxMicros-1e12+1e6) + linger}}, // + 1 s to store the 1e-15 permit
		})
	})
	t.Run("unlimited", func(t *testing.T) {
		runCharges(t, algo.SmoothBursty{Rate: math.Inf(1)}, []chargeStep{
			{t0, 1 << 50, true, algo.Decision{Allowed: true, Limit: 1 << 53, Remaining: 1 << 53, ResetAfter: linger, At: t0}},
		})
	})
}

func TestChargeSmoothWarmingUp(t *testing.T) {
	t.Parallel()
	// 2/s, warm-up 4 s, cold factor 3: interval 500 ms, cold interval 1.5 s, threshold 4,
	// maxPermits 8, slope 250 ms per permit, 500 ms of idleness per stored permit.
	a := algo.SmoothWarmingUp{Rate: 2, Warmup: 4 * time.Second}
	t0, ms := today, msec
	d := func(x int64) time.Duration { return time.Duration(x) * time.Microsecond }
	t.Run("debt", func(t *testing.T) {
		runCharges(t, a, []chargeStep{
			// Cold (8 stored): 10 permits cost the trapezoid 8→4 (4 × (1.5 s + 0.5 s) / 2 =
			// 4 s), 4 × 500 ms below the threshold and 2 fresh ones × 500 ms: 7 s. Cold again
			// 8 × 500 ms later.
			{t0, 10, true, algo.Decision{Allowed: true, Limit: 8, RetryAfter: 7 * time.Second, ResetAfter: 11 * time.Second, At: t0}},
			{t0 + 7000*ms - 1, 1, false, algo.Decision{Limit: 8, RetryAfter: d(1), ResetAfter: 4*time.Second + d(1)}},
			{t0 + 7000*ms, 1, false, algo.Decision{Allowed: true, Limit: 8, ResetAfter: 4500 * time.Millisecond, At: t0 + 7000*ms}},
		})
	})
	t.Run("stored only", func(t *testing.T) {
		// 3 of the 8 stored: the trapezoid 8→5, 3 × (1.5 s + 0.75 s) / 2 = 3.375 s, is the
		// next caller's wait even though no fresh permit was taken.
		runCharges(t, a, []chargeStep{
			{t0, 3, true, algo.Decision{Allowed: true, Limit: 8, RetryAfter: 3375 * time.Millisecond, ResetAfter: 4875 * time.Millisecond, At: t0}},
		})
	})
}

// TestChargeRetryAfterProperty: after any charge on any history, the Decision is allowed
// with Wait 0, Remaining is 0 while RetryAfter is not, and a request of one permit with
// MaxWait 0 is denied one µs before RetryAfter and granted at it (Never: still denied much
// later). Run on copies of the state, so the history goes on from the charge. Penalty
// around a smooth rule and a token bucket too: its RetryAfter counts the block.
func TestChargeRetryAfterProperty(t *testing.T) {
	t.Parallel()
	configs := []algo.Algorithm{
		algo.SmoothBursty{Rate: 1, MaxBurstSeconds: 10},
		algo.SmoothBursty{Rate: 1e6 / 7},
		algo.SmoothBursty{Rate: 1.0 / 3, MaxBurstSeconds: 2.5},
		algo.SmoothBursty{Rate: 1e-15},
		algo.SmoothBursty{Rate: math.Inf(1)},
		algo.SmoothWarmingUp{Rate: 2, Warmup: 4 * time.Second},
		algo.SmoothWarmingUp{Rate: 10, Warmup: 250 * time.Millisecond, ColdFactor: 10},
		algo.SmoothWarmingUp{Rate: 5, Warmup: 0},
		algo.Penalty{Rule: algo.SmoothBursty{Rate: 10, MaxBurstSeconds: 0.5}, Block: time.Second, Growth: 2, MaxBlock: 10 * time.Second},
		algo.Penalty{Rule: algo.SmoothWarmingUp{Rate: 10, Warmup: time.Second}, Block: 300 * time.Millisecond},
		algo.Penalty{Rule: algo.TokenBucket{Rate: 3.7, Burst: 4}, Block: 2 * time.Second, Growth: 3, MaxBlock: time.Minute},
	}
	for ci, a := range configs {
		t.Run(fmt.Sprint(a), func(t *testing.T) {
			t.Parallel()
			require.NotZero(t, algo.CapabilitiesOf(a)&algo.Chargeable, "%v states Chargeable", a)
			r := rand.New(rand.NewSource(int64(ci)))
			st := a.NewState()
			now := today
			charges, debts := 0, 0
			for step := 0; step < 3000; step++ {
				switch x := r.Intn(10); {
				case x < 6:
					now += r.Int63n(400 * msec)
				case x < 7:
					now -= r.Int63n(50 * msec) // a clock stepping back
				case x < 8:
					now += r.Int63n(30 * sec)
				}
				if r.Intn(3) != 0 {
					maxWait := []time.Duration{0, 0, 100 * time.Millisecond, algo.Forever}[r.Intn(4)]
					a.Apply(st, now, algo.Request{N: 1 + r.Int63n(4), MaxWait: maxWait})
					continue
				}
				n := 1 + r.Int63n([]int64{3, 40}[r.Intn(2)])
				got := a.Apply(st, now, algo.Request{N: n, Charge: true})
				charges++
				require.True(t, got.Allowed, "step %d: charge %d denied: %+v", step, n, got)
				require.Zero(t, got.Wait, "step %d", step)
				if got.RetryAfter > 0 {
					debts++
					assert.Zero(t, got.Remaining, "step %d: in debt, %+v", step, got)
				}
				at := func(t0 int64) algo.Decision {
					return a.Apply(st.(algo.StateCloner).CloneState(), t0, algo.Request{N: 1})
				}
				if got.RetryAfter == algo.Never {
					require.False(t, at(now+algo.MaxMicros/2).Allowed, "step %d: %+v", step, got)
					continue
				}
				retry := int64(got.RetryAfter / time.Microsecond)
				if retry > 0 {
					require.False(t, at(now+retry-1).Allowed, "step %d: %+v: granted 1 µs before RetryAfter", step, got)
				}
				require.True(t, at(now+retry).Allowed, "step %d: %+v: denied at RetryAfter", step, got)
			}
			t.Logf("%d charges, %d in debt", charges, debts)
			if b, ok := a.(algo.SmoothBursty); !ok || !math.IsInf(b.Rate, 1) { // every permit free there
				assert.Greater(t, debts, charges/10, "too few charges leave debt")
			}
		})
	}
}
