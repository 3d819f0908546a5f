// Package httplimit is net/http middleware that rate-limits requests with a
// limiter.Limiter, answers the ones over the limit with 429 Too Many Requests and
// Retry-After, and tells clients their quota in the RateLimit-Policy and RateLimit
// headers of the IETF draft (draft-ietf-httpapi-ratelimit-headers-11).
//
//	st, err := local.New()
//	...
//	l, err := limiter.New(st, algo.FixedWindow{Limit: 100, Window: time.Minute})
//	...
//	key, err := httplimit.ByIP(httplimit.TrustedProxies("10.0.0.0/8"))
//	...
//	mw, err := httplimit.Middleware(l, key)
//	...
//	http.ListenAndServe(":8080", mw(mux))
//
// Every key has its own limit. A [KeyFunc] computes it from the request: [ByIP] (the
// client's address, optionally behind [TrustedProxies]), [ByHeader] (an API key, a tenant
// ID) or any function of your own.
//
// Middleware, Concurrency, ByIP and ByHeader return an error wrapping
// algo.ErrInvalidConfig for an argument or option they cannot use, so a mistake shows at
// start-up, not as a 500 on every request.
//
// An allowed request reaches the next handler with the RateLimit headers; a denied one gets
// 429 with Retry-After in whole seconds, rounded up, at least 1 (left out when no wait
// would help). A key the client failed to send is 400; a closed store, a store that is down
// under FailClosed (the limiter's failure policy decides) and a client gone during a
// WithWait delay are 503; other errors are 500. Error responses never carry the error's
// text. [WithDeniedHandler] and [WithErrorHandler]
// replace these responses, [WithoutHeaders] drops the headers, and [WithWait] delays a
// request instead of denying it when its permits come within a bound. [WithChargeAfter]
// charges, after the handler, what the response reports the request used (an LLM's
// tokens, say): usage beyond the limit is debt that denies the key's next requests until
// it is earned back (docs/usage-based-limits.md).
//
// A composite limiter (limiter.All) is described rule by rule: one RateLimit-Policy and
// one RateLimit item per rule, each with that rule's own figures, named by algo.Named or
// after the rule ("fw-100-60s"). [WithQuotaUnit] sends the unit a cost counts ("qu",
// "content-bytes" for a cost in bytes), [WithPartitionKey] a partition key ("pk") that is
// an HMAC of the key, never the key, and [WithProblemDetails] answers 429 with an
// application/problem+json document listing the violated policies. [Concurrency], an
// adaptive limit on requests in flight, takes the same Options where they apply and sends
// its limit in "concurrent-requests".
//
// Frameworks: any net/http router takes the middleware as it is (chi: r.Use(mw)); gin,
// Echo and Fiber get it from the modules ginlimit, echolimit and fiberlimit, which run
// this package's middleware and so behave exactly the same.
//
// docs/httplimit.md has the full table of responses, real header lines, and how each
// header value (q, qu, w, r, t, pk) is derived from the limiter's Decisions and algorithm.
package httplimit
