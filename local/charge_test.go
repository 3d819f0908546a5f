package local

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratekit/limiter/algo"
)

// chargedOnly is a token bucket that states it can be charged but not that it is
// overflow-safe: a custom algorithm (or, once they are chargeable, the smooth limiters
// and Penalty) that a full store cannot decide on a shared state. (It embeds the
// interface, not the struct, so that the token bucket's own capabilities are not promoted.)
type chargedOnly struct{ algo.Algorithm }

func (chargedOnly) Capabilities() algo.Capability { return algo.Chargeable | algo.Exact }

// TestChargeFullStoreNotOverflowSafe: a charge of a new key that finds the store full of
// keys still limiting, under an algorithm that is not overflow-safe, is denied with the
// full shard's RetryAfter and records nothing: once room comes free the key is fresh.
func TestChargeFullStoreNotOverflowSafe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, clk := newTestStore(t, WithMaxKeys(1), WithShards(1))
	a := chargedOnly{algo.TokenBucket{Rate: 1, Burst: 4}}
	first, err := s.Apply(ctx, "a", a, algo.Request{N: 4})
	require.NoError(t, err)
	require.True(t, first.Allowed) // a is full again in 4 s

	d, err := s.Apply(ctx, "b", a, algo.Request{N: 10, Charge: true})
	require.NoError(t, err)
	assert.False(t, d.Allowed, "no room and no shared state: the charge is not recorded")
	assert.Equal(t, first.ResetAfter, d.RetryAfter, "retry when a is idle")
	assert.Equal(t, uint64(1), s.Overflows())
	assert.Equal(t, 1, s.Len())

	clk.Add(d.RetryAfter)
	d, err = s.Apply(ctx, "b", a, algo.Request{N: 4})
	require.NoError(t, err)
	assert.True(t, d.Allowed, "b was charged nothing: its whole burst is there")
}

// TestChargeFullStoreOverflowSafe: under an overflow-safe algorithm the charge of a new key
// in a full store is recorded on the shard's overflow state, whose other keys pay the debt.
func TestChargeFullStoreOverflowSafe(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newTestStore(t, WithMaxKeys(1), WithShards(1))
	tb := algo.TokenBucket{Rate: 1, Burst: 4}
	_, err := s.Apply(ctx, "a", tb, algo.Request{N: 4})
	require.NoError(t, err)

	d, err := s.Apply(ctx, "b", tb, algo.Request{N: 10, Charge: true})
	require.NoError(t, err)
	assert.True(t, d.Allowed)
	assert.Equal(t, 7*time.Second, d.RetryAfter, "4 − 10 = −6 tokens: one permit in 7 s")
	d, err = s.Apply(ctx, "c", tb, algo.Request{N: 1})
	require.NoError(t, err)
	assert.False(t, d.Allowed, "c shares the overflow state b charged")
	assert.Equal(t, 7*time.Second, d.RetryAfter)
}
