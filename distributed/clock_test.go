package distributed_test

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/store"
)

// TestStoreClock needs no server: Clock answers from the options.
func TestStoreClock(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	t.Cleanup(func() { _ = c.Close() })
	fake := clockx.NewFake(time.Unix(0, 0))
	for _, tc := range []struct {
		name string
		opts []distributed.Option
		want clockx.Clock
	}{
		{"server TIME", nil, clockx.Real()},
		{"nil option", []distributed.Option{nil}, clockx.Real()},
		{"client clock", []distributed.Option{distributed.WithClientClock(fake)}, fake},
	} {
		s := teststore.Redis(t, c, tc.opts...)
		var cl store.Clocked = s
		if got := cl.Clock(); got != tc.want {
			t.Errorf("%s: Clock() = %v, want %v", tc.name, got, tc.want)
		}
		_ = s.Close()
	}
}
