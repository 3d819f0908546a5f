package limiter_test

import (
	"context"
	"fmt"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/local"
)

// An operator looks at a user's limit without spending it, then lifts it.
func ExampleLimiter_Peek() {
	st, err := local.New(local.WithClock(exampleClock()))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()
	l, err := limiter.New(st, algo.TokenBucket{Rate: 1, Burst: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for range 3 {
		_, _ = l.Allow(ctx, "user:42")
	}
	d, _ := l.Peek(ctx, "user:42")
	fmt.Printf("peek: allowed=%t remaining=%d retry after %v\n", d.Allowed, d.Remaining, d.RetryAfter)
	d, _ = l.Peek(ctx, "user:42") // peeking again spends nothing either
	fmt.Printf("peek: allowed=%t remaining=%d retry after %v\n", d.Allowed, d.Remaining, d.RetryAfter)

	if err := l.Reset(ctx, "user:42"); err != nil {
		fmt.Println(err)
		return
	}
	d, _ = l.Allow(ctx, "user:42")
	fmt.Printf("after Reset: allowed=%t remaining=%d\n", d.Allowed, d.Remaining)
	// Output:
	// peek: allowed=false remaining=0 retry after 1s
	// peek: allowed=false remaining=0 retry after 1s
	// after Reset: allowed=true remaining=2
}
