package httplimit_test

import (
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/httplimit"
)

// TestShadowServesWithRealHeaders: a limiter in shadow mode lets every request through
// (200) while the RateLimit headers show the real figures, with and without WithWait.
func TestShadowServesWithRealHeaders(t *testing.T) {
	t.Parallel()
	for _, wait := range []time.Duration{0, 2 * time.Second} {
		t.Run("wait="+wait.String(), func(t *testing.T) {
			t.Parallel()
			l, clk := newLimiter(t, algo.FixedWindow{Limit: 2, Window: time.Minute}, epoch.Add(43*time.Second), limiter.WithShadow())
			next := &counter{}
			h := mustMiddleware(t, l, mustByIP(t), httplimit.WithWait(wait))(next)
			const policy = `"default";q=2;w=60`
			runSteps(t, h, clk, []step{
				{0, response{200, policy, `"default";r=1;t=17`, ""}},
				{0, response{200, policy, `"default";r=0;t=17`, ""}},
				// Denied in truth: served, no Retry-After, the real figures.
				{0, response{200, policy, `"default";r=0;t=17`, ""}},
				{0, response{200, policy, `"default";r=0;t=17`, ""}},
				{17 * time.Second, response{200, policy, `"default";r=1;t=60`, ""}},
			})
			if got, want := next.calls(), int64(5); got != want {
				t.Errorf("handler called %d times, want %d", got, want)
			}
		})
	}
}
