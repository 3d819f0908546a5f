package limiter_test

import (
	"context"
	"fmt"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/local"
)

// An LLM proxy limits tokens per minute per API key. A prompt's tokens are known before
// the model runs, its completion's only after: the proxy checks the prompt with AllowN,
// which denies what does not fit, and charges the completion with Charge, which records it
// whatever is left. A completion that overshoots leaves the key in debt, and the key's
// next requests wait it out. (With no estimate, check 1 and charge the rest.)
func ExampleLimiter_Charge() {
	clk := exampleClock()
	st, err := local.New(local.WithClock(clk))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	// 600 tokens a minute per API key (10 a second), up to 600 at once.
	l, err := limiter.New(st, algo.TokenBucket{Rate: 10, Burst: 600}, limiter.WithClock(clk))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	complete := func(key string, prompt, completion int64) {
		d, err := l.AllowN(ctx, key, prompt)
		if err != nil {
			fmt.Println(err)
			return
		}
		if !d.Allowed {
			fmt.Printf("%s: prompt of %d denied, retry after %v\n", key, prompt, d.RetryAfter)
			return
		}
		// ... the model answers; its response reports the completion's tokens ...
		if completion > 0 { // Charge(0) is an error, like AllowN(0)
			if d, err = l.Charge(ctx, key, completion); err != nil {
				fmt.Println(err)
				return
			}
		}
		fmt.Printf("%s: %d+%d tokens, %d left", key, prompt, completion, d.Remaining)
		if d.RetryAfter > 0 {
			fmt.Printf(", in debt: next token in %v", d.RetryAfter)
		}
		fmt.Println()
	}

	complete("key-a", 100, 350)
	complete("key-a", 100, 400) // 450 left after the prompt: 350 in debt
	complete("key-a", 100, 0)
	complete("key-b", 100, 50) // every API key has its own budget
	clk.Add(45 * time.Second)  // 450 tokens earned back: the debt and the next prompt
	complete("key-a", 100, 20)
	// Output:
	// key-a: 100+350 tokens, 150 left
	// key-a: 100+400 tokens, 0 left, in debt: next token in 35.1s
	// key-a: prompt of 100 denied, retry after 45s
	// key-b: 100+50 tokens, 450 left
	// key-a: 100+20 tokens, 0 left, in debt: next token in 2.1s
}
