package algo_test

import (
	"fmt"
	"time"

	"github.com/ratekit/limiter/algo"
)

// A store drives the transitions with its own clock; here the instants are written out,
// in µs since the Unix epoch.
func ExampleTokenBucket() {
	tb := algo.TokenBucket{Rate: 2, Burst: 3} // 2 per second, 3 at once
	st := tb.NewState()
	for _, now := range []int64{0, 0, 0, 0, 500_000} {
		d := tb.Apply(st, now, algo.Request{N: 1})
		fmt.Printf("t=%.1fs allowed=%v remaining=%d retry=%v\n", float64(now)/1e6, d.Allowed, d.Remaining, d.RetryAfter)
	}
	// Output:
	// t=0.0s allowed=true remaining=2 retry=0s
	// t=0.0s allowed=true remaining=1 retry=0s
	// t=0.0s allowed=true remaining=0 retry=0s
	// t=0.0s allowed=false remaining=0 retry=500ms
	// t=0.5s allowed=true remaining=0 retry=0s
}

// With MaxWait, a request that cannot be granted now reserves the earliest grant within
// MaxWait; requests that come later queue behind it.
func ExampleRequest_reservation() {
	lb := algo.LeakyBucket{Rate: 10, Capacity: 5} // a queue leaking 10 per second
	st := lb.NewState()
	for i := 0; i < 4; i++ {
		d := lb.Apply(st, 0, algo.Request{N: 1, MaxWait: time.Second})
		fmt.Printf("allowed=%v wait=%v\n", d.Allowed, d.Wait)
	}
	// Output:
	// allowed=true wait=0s
	// allowed=true wait=100ms
	// allowed=true wait=200ms
	// allowed=true wait=300ms
}

// Windows are aligned to the epoch: every process agrees that a one-minute window starts
// on the minute.
func ExampleFixedWindow() {
	fw := algo.FixedWindow{Limit: 2, Window: time.Minute}
	st := fw.NewState()
	minute := int64(60_000_000)
	for _, now := range []int64{10 * minute, 10*minute + 1, 10*minute + 2, 11 * minute} {
		d := fw.Apply(st, now, algo.Request{N: 1})
		fmt.Printf("allowed=%v retry=%v reset=%v\n", d.Allowed, d.RetryAfter, d.ResetAfter)
	}
	// Output:
	// allowed=true retry=0s reset=1m0s
	// allowed=true retry=0s reset=59.999999s
	// allowed=false retry=59.999998s reset=59.999998s
	// allowed=true retry=0s reset=1m0s
}

// A Scripted algorithm gives the Redis store its Lua twin and the config its script reads
// from ARGV[5] on; the store encodes the request before it (see Script) and decodes the
// reply.
func ExampleScripted() {
	var s algo.Scripted = algo.TokenBucket{Rate: 10, Burst: 5}
	def := s.Script()
	fmt.Printf("script %s, keys %q, config %#v\n", def.Name, def.Keys, s.AppendArgs(nil))
	// Output:
	// script token-bucket, keys [""], config []interface {}{"10", 5}
}
