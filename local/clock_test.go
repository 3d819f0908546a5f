package local_test

import (
	"testing"
	"time"

	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

func TestStoreClock(t *testing.T) {
	t.Parallel()
	fake := clockx.NewFake(time.Unix(0, 0))
	for _, tc := range []struct {
		opts []local.Option
		want clockx.Clock
	}{
		{nil, clockx.Real()},
		{[]local.Option{nil}, clockx.Real()},
		{[]local.Option{local.WithClock(fake)}, fake},
	} {
		s := teststore.Local(t, append(tc.opts, local.WithSweepInterval(0))...)
		var c store.Clocked = s
		if got := c.Clock(); got != tc.want {
			t.Errorf("Clock() = %v, want %v", got, tc.want)
		}
		_ = s.Close()
	}
}
