package limiter_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/store"
)

// The two rules of the composite charge tests: a charge of 20 leaves the first 10 tokens
// in debt (one permit in 11 s) and the second 15 (at 2/s, one permit in 8 s).
var (
	chargeLong  = algo.TokenBucket{Rate: 1, Burst: 10}
	chargeShort = algo.Named(algo.TokenBucket{Rate: 2, Burst: 5}, "short")
)

// checkCharged checks that rule l was charged 20 at the test's start: denied until the
// debt is earned back (after RetryAfter want, from start).
func checkCharged(t *testing.T, l *limiter.Limiter, want time.Duration, what string) {
	t.Helper()
	d := allowN(t, l, "k", 1)
	assert.False(t, d.Allowed, "%s: not charged: %+v", what, d)
	assert.Equal(t, want, d.RetryAfter, what)
}

// TestChargeAllOneStore: a composite of two rules on one store and key charges both in
// one atomic ApplyAll (no Apply), and its Decision is bound by the longer debt.
func TestChargeAllOneStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clockx.NewFake(start)
	st := newFlakyMulti(t, clk)
	long := mustNew(t, st, chargeLong, limiter.WithClock(clk))
	short := mustNew(t, st, chargeShort, limiter.WithClock(clk))
	all := mustAll(t, long, short)

	d, err := all.Charge(ctx, "k", 20)
	require.NoError(t, err)
	assert.Equal(t, 1, st.multis, "one ApplyAll")
	assert.Zero(t, st.applies.Load(), "no Apply: the rules are charged at once")
	assert.True(t, d.Allowed)
	assert.Equal(t, int64(0), d.Remaining)
	assert.Equal(t, 11*time.Second, d.RetryAfter, "the longer debt binds")

	checkCharged(t, long, 11*time.Second, "long")
	checkCharged(t, short, 8*time.Second, "short")
	clk.Add(11*time.Second - time.Microsecond)
	assert.False(t, allowN(t, all, "k", 1).Allowed)
	clk.Add(time.Microsecond)
	assert.True(t, allowN(t, all, "k", 1).Allowed)
}

// TestChargeAllTwoStores: a composite over two stores charges each.
func TestChargeAllTwoStores(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clockx.NewFake(start)
	long := mustNew(t, newLocal(t, clk), chargeLong, limiter.WithClock(clk))
	short := mustNew(t, newLocal(t, clk), chargeShort, limiter.WithClock(clk))
	d, err := mustAll(t, long, short).Charge(ctx, "k", 20)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, int64(0), d.Remaining)
	assert.Equal(t, 11*time.Second, d.RetryAfter)
	checkCharged(t, long, 11*time.Second, "long")
	checkCharged(t, short, 8*time.Second, "short")
}

// TestChargeFallback: a charge while the store is down charges the Fallback limiter, and
// the store (back up) was charged nothing.
func TestChargeFallback(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := clockx.NewFake(start)
	fb := mustNew(t, newLocal(t, clk), chargeLong, limiter.WithClock(clk))
	down := &flakyStore{Store: newLocal(t, clk)}
	down.down.Store(true)
	l := mustNew(t, down, chargeLong, limiter.WithClock(clk), limiter.WithFailurePolicy(limiter.Fallback(fb)))

	d, err := l.Charge(ctx, "k", 20)
	require.ErrorIs(t, err, store.ErrUnavailable, "the outage is said beside the fallback's answer")
	assert.True(t, d.Allowed)
	assert.Equal(t, 11*time.Second, d.RetryAfter, "the fallback's debt")
	checkCharged(t, fb, 11*time.Second, "fallback")

	down.down.Store(false)
	assert.True(t, allowN(t, l, "k", 10).Allowed, "the store was charged nothing")
}

// TestChargeFailOpenClosedRecordNothing: under FailOpen a charge while the store is down
// is allowed with the error, under FailClosed it fails; either way nothing is recorded,
// and a composite failing closed gives back what its healthy rule was charged.
func TestChargeFailOpenClosedRecordNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		policy  limiter.FailurePolicy
		allowed bool
	}{{"FailOpen", limiter.FailOpen, true}, {"FailClosed", limiter.FailClosed, false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clk := clockx.NewFake(start)
			down := &flakyStore{Store: newLocal(t, clk)}
			down.down.Store(true)
			l := mustNew(t, down, chargeLong, limiter.WithClock(clk), limiter.WithFailurePolicy(tc.policy))
			d, err := l.Charge(ctx, "k", 20)
			require.ErrorIs(t, err, store.ErrUnavailable)
			assert.Equal(t, tc.allowed, d.Allowed)

			healthy := mustNew(t, newLocal(t, clk), chargeShort, limiter.WithClock(clk))
			_, err = mustAll(t, healthy, l).Charge(ctx, "k", 20)
			require.ErrorIs(t, err, store.ErrUnavailable)

			down.down.Store(false)
			assert.True(t, allowN(t, l, "k", 10).Allowed, "the store down was charged nothing")
			if tc.allowed {
				checkCharged(t, healthy, 8*time.Second, "FailOpen: the healthy rule keeps its charge")
			} else {
				assert.True(t, allowN(t, healthy, "k", 5).Allowed, "FailClosed: the healthy rule's charge was given back")
			}
		})
	}
}
