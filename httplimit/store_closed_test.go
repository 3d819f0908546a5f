package httplimit_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// TestStoreClosed checks that a request arriving after the store was closed (a shutdown)
// gets 503, as for a store that is down, not 500, in both modes.
func TestStoreClosed(t *testing.T) {
	t.Parallel()
	for _, wait := range []time.Duration{0, 2 * time.Second} {
		t.Run("wait="+wait.String(), func(t *testing.T) {
			t.Parallel()
			clk := clockx.NewFake(epoch)
			st := teststore.Local(t, local.WithClock(clk), local.WithSweepInterval(0))
			l, err := limiter.New(st, algo.TokenBucket{Rate: 1, Burst: 3}, limiter.WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			_ = st.Close()
			var got error
			next := &counter{}
			h := mustMiddleware(t, l, mustByIP(t), httplimit.WithWait(wait),
				httplimit.WithErrorHandler(func(w http.ResponseWriter, r *http.Request, err error) {
					got = err
					httplimit.DefaultErrorHandler(w, r, err)
				}))(next)
			checkResponse(t, "closed store", get(h, "192.0.2.1:1"), response{503, "", "", ""})
			if !errors.Is(got, store.ErrClosed) {
				t.Errorf("error handler got %v, want one wrapping store.ErrClosed", got)
			}
			if next.calls() != 0 {
				t.Error("handler called with the store closed")
			}
		})
	}
}
