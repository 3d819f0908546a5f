package httplimit_test

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/httplimit"
)

// An LLM proxy limits tokens per minute per API key. The check before a request takes 1
// token; the upstream's response reports the tokens it used in X-Usage-Tokens, and
// WithChargeAfter charges the rest of them, whatever is left: a response that overshoots
// leaves the key in debt, and its next requests get 429 until the debt is paid. (The
// RateLimit headers of a response are sent before its handler runs: they describe the key
// after the check, not after the charge.)
func ExampleWithChargeAfter() {
	// 600 tokens a minute per API key (10 a second), up to 600 at once.
	l, clk, done := exampleLimiter(algo.TokenBucket{Rate: 10, Burst: 600})
	defer done()
	key, err := httplimit.ByHeader("X-API-Key")
	if err != nil {
		fmt.Println(err)
		return
	}
	usage := func(_ *http.Request, status int, h http.Header) int64 {
		if status != http.StatusOK {
			return 0 // a failed completion costs nothing here
		}
		n, _ := strconv.ParseInt(h.Get("X-Usage-Tokens"), 10, 64)
		return n - 1 // the check took 1
	}
	mw, err := httplimit.Middleware(l, key, httplimit.WithChargeAfter(usage),
		httplimit.WithQuotaUnit("tokens"))
	if err != nil {
		fmt.Println(err)
		return
	}
	// The upstream: this one answers with 900 tokens, more than a minute's budget.
	llm := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Usage-Tokens", "900")
		fmt.Fprintln(w, "completion")
	})
	h := mw(llm)

	send(h, "192.0.2.1:1", "X-API-Key", "key-a") // 1 + 899 charged: 300 in debt
	send(h, "192.0.2.1:1", "X-API-Key", "key-a") // the next token: 301 to earn, 30.1 s
	send(h, "192.0.2.1:1", "X-API-Key", "key-b") // another key, its own budget
	clk.Add(31 * time.Second)                    // 10 tokens: served, and in debt again
	send(h, "192.0.2.1:1", "X-API-Key", "key-a")
	// Output:
	// 200 | RateLimit-Policy: "default";q=600;qu="tokens";w=60 | RateLimit: "default";r=599;t=1
	// 429 | RateLimit-Policy: "default";q=600;qu="tokens";w=60 | RateLimit: "default";r=0;t=31 | Retry-After: 31
	// 200 | RateLimit-Policy: "default";q=600;qu="tokens";w=60 | RateLimit: "default";r=599;t=1
	// 200 | RateLimit-Policy: "default";q=600;qu="tokens";w=60 | RateLimit: "default";r=9;t=60
}
