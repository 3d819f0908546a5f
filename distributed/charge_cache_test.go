package distributed_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
)

// TestDenialCacheLearnsCharge: a charge always reaches Redis (it is never answered from
// the cache, even with a denial kept), and a key it left in debt is denied from the
// cache, with no Redis call, until the charge's RetryAfter; then Redis grants again.
// Every algorithm that is both chargeable and cacheable is covered.
func TestDenialCacheLearnsCharge(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	ctx := ctxTimeout(t, 60*time.Second)
	covered := 0
	for _, a := range algo.Samples() {
		if c := algo.CapabilitiesOf(a); c&algo.Chargeable == 0 || c&algo.DenialCacheable == 0 || c&algo.Exact == 0 {
			continue
		}
		covered++
		t.Run(fmt.Sprint(a), func(t *testing.T) {
			clk := fakeClock()
			calls := &countCalls{}
			cc := redistest.WithoutExpiry(redis.NewClient(&redis.Options{Addr: srv.Addr(), ContextTimeoutEnabled: true}))
			cc.AddHook(calls)
			t.Cleanup(func() { _ = cc.Close() })
			s := teststore.Redis(t, cc, distributed.WithPrefix(freshPrefix()), distributed.WithClientClock(clk),
				distributed.WithTimeout(testTimeout), distributed.WithDenialCache(distributed.DenialCache{}))
			q, _ := algo.QuotaOf(a)
			one := algo.Request{N: 1}

			// A denial kept by the cache does not answer a charge.
			_, err := s.Apply(ctx, "k", a, algo.Request{N: q.Limit})
			require.NoError(t, err)
			d, err := s.Apply(ctx, "k", a, one)
			require.NoError(t, err)
			require.False(t, d.Allowed)
			before := calls.n.Load()
			d, err = s.Apply(ctx, "k", a, algo.Request{N: 2 * q.Limit, Charge: true})
			require.NoError(t, err)
			assert.Equal(t, before+1, calls.n.Load(), "the charge reached Redis")
			require.True(t, d.Allowed, "a charge is never denied: %+v", d)
			require.Positive(t, d.RetryAfter)
			require.NotEqual(t, algo.Never, d.RetryAfter)
			retry := d.RetryAfter

			// Until RetryAfter: denied from the cache.
			before = calls.n.Load()
			for _, at := range []time.Duration{0, (retry / 2).Truncate(time.Microsecond), retry - time.Microsecond} {
				clk.Set(epoch.Add(at)) // the charge was at epoch: its RetryAfter counts from there
				d, err := s.Apply(ctx, "k", a, one)
				require.NoError(t, err)
				assert.False(t, d.Allowed, "at +%v, before the charge's RetryAfter %v", at, retry)
				assert.Equal(t, retry-at, d.RetryAfter, "at +%v", at)
			}
			assert.Equal(t, before, calls.n.Load(), "the denials after the charge were answered from the cache")

			// At RetryAfter: Redis is asked, and grants.
			clk.Set(epoch.Add(retry))
			d, err = s.Apply(ctx, "k", a, one)
			require.NoError(t, err)
			assert.True(t, d.Allowed, "at the charge's RetryAfter: %+v", d)
			assert.Greater(t, calls.n.Load(), before, "a grant comes from Redis")
		})
	}
	require.Positive(t, covered, "no sample is chargeable, cacheable and exact")
}
