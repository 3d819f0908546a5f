package algo_test

import (
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
)

// A key that goes over 2 per second is blocked for 10 s, then 20 s, 40 s, ... up to 5
// minutes while it keeps offending; a request it sends while blocked is denied without
// being counted.
func ExamplePenalty() {
	p := algo.Penalty{
		Rule:     algo.FixedWindow{Limit: 2, Window: time.Second},
		Block:    10 * time.Second,
		Growth:   2,
		MaxBlock: 5 * time.Minute,
	}
	st := p.NewState()
	for _, sec := range []int64{0, 0, 0, 5, 10, 10, 10} {
		d := p.Apply(st, sec*1_000_000, algo.Request{N: 1})
		fmt.Printf("t=%2ds allowed=%v retry=%v\n", sec, d.Allowed, d.RetryAfter)
	}
	// Output:
	// t= 0s allowed=true retry=0s
	// t= 0s allowed=true retry=0s
	// t= 0s allowed=false retry=10s
	// t= 5s allowed=false retry=5s
	// t=10s allowed=true retry=0s
	// t=10s allowed=true retry=0s
	// t=10s allowed=false retry=20s
}
