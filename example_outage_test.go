package limiter_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// unreachable is a store that can be switched off like a Redis that is down.
type unreachable struct {
	store.Store
	down bool
}

func (s *unreachable) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	if s.down {
		return algo.Decision{}, fmt.Errorf("%w: dial tcp 10.0.0.7:6379: connect: connection refused", store.ErrUnavailable)
	}
	return s.Store.Apply(ctx, key, a, req)
}

// An outage of the store said in three lines: when it began (with its cause), when the
// circuit breaker opened, and when the store answered again (with how long it was down).
// The clock is a fake one here, moved by hand; the time of each line is left out so that
// the output stays the same.
func ExampleCircuitBreaker_logger() {
	clk := exampleClock()
	ls, err := local.New(local.WithClock(clk))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer ls.Close()
	st := &unreachable{Store: ls}
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
	l, err := limiter.New(st, algo.TokenBucket{Rate: 100, Burst: 100},
		limiter.WithCircuitBreaker(limiter.CircuitBreaker{Logger: log.With("limiter", "api")}), limiter.WithClock(clk))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	st.down = true
	for range 10 { // 5 calls a second, for 2 s
		_, _ = l.Allow(ctx, "user:42")
		clk.Add(200 * time.Millisecond)
	}
	st.down = false
	_, _ = l.Allow(ctx, "user:42") // the probe, one cool-down after the breaker opened
	// Output:
	// level=WARN msg="limiter: store outage began" limiter=api cause="limiter: store unavailable: dial tcp 10.0.0.7:6379: connect: connection refused"
	// level=ERROR msg="limiter: circuit breaker opened" limiter=api by="consecutive failures" failures=6 calls=6 cool_down=1s
	// level=INFO msg="limiter: store recovered" limiter=api outage=2s
}
