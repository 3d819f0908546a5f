package limiter_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/local"
)

// printObserver prints each decision and breaker change; a real one counts them (package
// otellimit turns them into OpenTelemetry metrics).
type printObserver struct{}

func (printObserver) Decided(_ context.Context, e limiter.Event) {
	fmt.Printf("observed %s: %s remaining=%d shadow=%t\n", e.Key, e.Outcome, e.Decision.Remaining, e.Shadow)
}

func (printObserver) BreakerChanged(from, to limiter.BreakerState) {
	fmt.Printf("breaker %s -> %s\n", from, to)
}

// An Observer is told about every decision, with its outcome and figures.
func ExampleWithObserver() {
	st, err := local.New(local.WithClock(exampleClock()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	l, err := limiter.New(st, algo.FixedWindow{Limit: 2, Window: time.Minute}, limiter.WithObserver(printObserver{}))
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 3 {
		_, _ = l.Allow(context.Background(), "user:42")
	}
	// Output:
	// observed user:42: allowed remaining=1 shadow=false
	// observed user:42: allowed remaining=0 shadow=false
	// observed user:42: denied remaining=0 shadow=false
}

// A new, stricter limit tried in shadow mode: every request gets through, the Observer
// sees which ones the limit would have denied, and the Decision keeps the real figures.
func ExampleWithShadow() {
	st, err := local.New(local.WithClock(exampleClock()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	l, err := limiter.New(st, algo.FixedWindow{Limit: 1, Window: time.Minute},
		limiter.WithShadow(), limiter.WithObserver(printObserver{}))
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 2 {
		d, _ := l.Allow(context.Background(), "user:42")
		fmt.Printf("caller: allowed=%t remaining=%d\n", d.Allowed, d.Remaining)
	}
	// Output:
	// observed user:42: allowed remaining=0 shadow=true
	// caller: allowed=true remaining=0
	// observed user:42: denied remaining=0 shadow=true
	// caller: allowed=true remaining=0
}
