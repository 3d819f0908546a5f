package limiter_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChargeTokenBucketDebt is the example of the issue: TokenBucket{Rate: 1, Burst: 10}, 5
// taken, a charge of 20 leaves the key 15 tokens in debt: one permit in 16 s.
func TestChargeTokenBucketDebt(t *testing.T) {
	l, clk := newTest(t, algo.TokenBucket{Rate: 1, Burst: 10})
	ctx := context.Background()
	require.True(t, allowN(t, l, "k", 5).Allowed)

	d, err := l.Charge(ctx, "k", 20)
	require.NoError(t, err)
	assert.True(t, d.Allowed, "a charge is never denied")
	assert.Equal(t, int64(0), d.Remaining)
	assert.Equal(t, 16*time.Second, d.RetryAfter)
	assert.Zero(t, d.Wait)

	d = allowN(t, l, "k", 1)
	assert.False(t, d.Allowed)
	assert.Equal(t, 16*time.Second, d.RetryAfter)

	clk.Add(16*time.Second - time.Microsecond)
	assert.False(t, allowN(t, l, "k", 1).Allowed, "one µs before the debt is earned back")
	clk.Add(time.Microsecond)
	assert.True(t, allowN(t, l, "k", 1).Allowed)
}

// TestChargeWithinWhatIsLeft: a charge that fits takes what it says, like AllowN, and its
// Decision says what is left with no RetryAfter.
func TestChargeWithinWhatIsLeft(t *testing.T) {
	l, _ := newTest(t, algo.TokenBucket{Rate: 1, Burst: 10})
	d, err := l.Charge(context.Background(), "k", 4)
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, int64(6), d.Remaining)
	assert.Zero(t, d.RetryAfter)
	assert.Equal(t, int64(6), allowN(t, l, "k", 6).Remaining+6)
}

// TestChargeBadInput: n ≤ 0, n above 2^53 and an algorithm that cannot be charged are
// errors wrapping algo.ErrInvalidRequest, and nothing is recorded.
func TestChargeBadInput(t *testing.T) {
	ctx := context.Background()
	l, _ := newTest(t, algo.TokenBucket{Rate: 1, Burst: 10})
	for _, n := range []int64{0, -1, 1<<53 + 1} {
		_, err := l.Charge(ctx, "k", n)
		assert.ErrorIs(t, err, algo.ErrInvalidRequest, "Charge(%d)", n)
	}
	assert.Equal(t, int64(9), allowN(t, l, "k", 1).Remaining, "a refused charge takes nothing")

	u, _ := newTest(t, uncharged{algo.TokenBucket{Rate: 1, Burst: 10}})
	_, err := u.Charge(ctx, "k", 1)
	assert.ErrorIs(t, err, algo.ErrInvalidRequest)
	assert.Contains(t, err.Error(), "cannot be charged")
}

// TestChargeCompositeChecksEveryRuleFirst: a composite with one rule that cannot be
// charged charges none of them.
func TestChargeCompositeChecksEveryRuleFirst(t *testing.T) {
	ctx := context.Background()
	a, _ := newTest(t, algo.TokenBucket{Rate: 1, Burst: 10})
	b, _ := newTest(t, uncharged{algo.GCRA{Rate: 1, Burst: 10}})
	all, err := limiter.All(a, b)
	require.NoError(t, err)
	_, err = all.Charge(ctx, "k", 3)
	require.ErrorIs(t, err, algo.ErrInvalidRequest)
	assert.Equal(t, int64(9), allowN(t, a, "k", 1).Remaining, "the first rule was not charged")
}

// TestChargeObserved: the observer sees a charge as its own kind of event.
func TestChargeObserved(t *testing.T) {
	obs := &recordingObserver{}
	l, _ := newTest(t, algo.TokenBucket{Rate: 1, Burst: 10}, limiter.WithObserver(obs))
	_, err := l.Charge(context.Background(), "k", 12)
	require.NoError(t, err)
	allowN(t, l, "k", 1)
	es := obs.all()
	require.Len(t, es, 2)
	assert.Equal(t, limiter.OutcomeCharged, es[0].Outcome)
	assert.True(t, es[0].Charge)
	assert.Equal(t, int64(12), es[0].N)
	assert.Equal(t, "charged", es[0].Outcome.String())
	assert.Equal(t, limiter.OutcomeDenied, es[1].Outcome)
	assert.False(t, es[1].Charge)
}

// uncharged wraps an algorithm and states no capability: a custom algorithm that never
// said it can be charged.
type uncharged struct{ algo.Algorithm }

func (uncharged) Capabilities() algo.Capability { return 0 }

// recordingObserver keeps every Event it is told of.
type recordingObserver struct {
	mu sync.Mutex
	es []limiter.Event
}

func (o *recordingObserver) Decided(_ context.Context, e limiter.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.es = append(o.es, e)
}

func (o *recordingObserver) BreakerChanged(limiter.BreakerState, limiter.BreakerState) {}

func (o *recordingObserver) all() []limiter.Event {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]limiter.Event(nil), o.es...)
}
