package limiter_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/local"
)

// Two limits on one API key: 5 per second AND 2 per 100 ms. Both rules live in one store
// under one key, so each request is checked and taken by both in one atomic step; a
// request the second rule denies takes nothing from the first.
func ExampleAll() {
	clk := exampleClock()
	st, err := local.New(local.WithClock(clk))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	perSecond, _ := limiter.New(st, algo.FixedWindow{Limit: 5, Window: time.Second})
	per100ms, _ := limiter.New(st, algo.FixedWindow{Limit: 2, Window: 100 * time.Millisecond})
	api, err := limiter.All(perSecond, per100ms)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	t0 := clk.Now()
	for i := 1; i <= 8; i++ {
		d, _ := api.Allow(ctx, "api-key:7")
		if d.Allowed {
			fmt.Printf("t=%v request %d: allowed, %d left\n", clk.Now().Sub(t0), i, d.Remaining)
		} else {
			fmt.Printf("t=%v request %d: denied, retry after %v\n", clk.Now().Sub(t0), i, d.RetryAfter)
			clk.Add(d.RetryAfter)
		}
	}
	// Output:
	// t=0s request 1: allowed, 1 left
	// t=0s request 2: allowed, 0 left
	// t=0s request 3: denied, retry after 100ms
	// t=100ms request 4: allowed, 1 left
	// t=100ms request 5: allowed, 0 left
	// t=100ms request 6: denied, retry after 100ms
	// t=200ms request 7: allowed, 0 left
	// t=200ms request 8: denied, retry after 800ms
}

// Per user AND per item: each rule picks its part of the key with WithKeyFunc. The rules
// limit different keys, so a request the item rule denies has its permit refunded to the
// user rule.
func ExampleAll_perUserAndItem() {
	clk := exampleClock()
	st, err := local.New(local.WithClock(clk))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	user := func(k string) string { u, _, _ := strings.Cut(k, "/"); return "user:" + u }
	item := func(k string) string { _, i, _ := strings.Cut(k, "/"); return "item:" + i }
	perUser, _ := limiter.New(st, algo.TokenBucket{Rate: 1, Burst: 3}, limiter.WithKeyFunc(user))
	perItem, _ := limiter.New(st, algo.Named(algo.TokenBucket{Rate: 0.1, Burst: 1}, "item"), limiter.WithKeyFunc(item))
	orders, _ := limiter.All(perUser, perItem)

	ctx := context.Background()
	for _, k := range []string{"ann/book", "bob/book", "ann/pen", "ann/cup"} {
		d, _ := orders.Allow(ctx, k)
		fmt.Printf("%-8s allowed=%v\n", k, d.Allowed)
	}
	// Bob's denied order took nothing from his own bucket: it holds 3, this takes 1.
	d, _ := perUser.Allow(ctx, "bob/")
	fmt.Println("bob's bucket:", d.Remaining, "left")
	// Output:
	// ann/book allowed=true
	// bob/book allowed=false
	// ann/pen  allowed=true
	// ann/cup  allowed=true
	// bob's bucket: 2 left
}
