package clockx_test

import (
	"context"
	"fmt"
	"time"

	"github.com/benbjohnson/clock"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/local"
)

// A test that drives its code with a *clock.Mock drives the limiter with the same mock:
// Wait sleeps until the mock has moved to the grant, however long that takes in real time.
func ExampleFrom() {
	mock := clock.NewMock()
	start := mock.Now()
	st, err := local.New(local.WithClock(clockx.From(mock))) // the limiter sleeps on the store's clock
	if err != nil {
		panic(err)
	}
	defer st.Close()
	l, err := limiter.New(st, algo.TokenBucket{Rate: 1, Burst: 1})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	fmt.Println(l.Wait(ctx, "user:42")) // the burst: at once

	done := make(chan error, 1)
	go func() { done <- l.Wait(ctx, "user:42") }() // the next token comes 1 s later on the mock
	for {
		select {
		case err := <-done:
			fmt.Println(err, mock.Now().Sub(start) >= time.Second)
			return
		default:
			mock.Add(100 * time.Millisecond) // what the test would do: move the mock
		}
	}
	// Output:
	// <nil>
	// <nil> true
}
