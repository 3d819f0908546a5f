// Package httplimit is net/http middleware that rate-limits requests with a
// limiter.Limiter, answers the ones over the limit with 429 Too Many Requests and
// Retry-After, and tells clients their quota in the RateLimit-Policy and RateLimit
// headers of the IETF draft (draft-ietf-httpapi-ratelimit-headers-11).
//
//	st := local.New()
//	l, err := limiter.New(st, algo.FixedWindow{Limit: 100, Window: time.Minute})
//	...
//	mw := httplimit.Middleware(l, httplimit.ByIP(httplimit.TrustedProxies("10.0.0.0/8")))
//	http.ListenAndServe(":8080", mw(mux))
//
// Every key has its own limit. A [KeyFunc] computes it from the request: [ByIP] (the
// client's address, optionally behind [TrustedProxies]), [ByHeader] (an API key, a tenant
// ID) or any function of your own.
//
// An allowed request reaches the next handler with the RateLimit headers; a denied one gets
// 429 with Retry-After in whole seconds, rounded up, at least 1 (left out when no wait
// would help). A key the client failed to send is 400; a closed store, a store that is down
// under FailClosed (the limiter's failure policy decides) and a client gone during a
// WithWait delay are 503; other errors are 500. Error responses never carry the error's
// text. [WithDeniedHandler] and [WithErrorHandler]
// replace these responses, [WithoutHeaders] drops the headers, and [WithWait] delays a
// request instead of denying it when its permits come within a bound.
//
// docs/httplimit.md has the full table of responses and how each header value (q, w, r, t)
// is derived from the limiter's Decision and algorithm.
package httplimit
