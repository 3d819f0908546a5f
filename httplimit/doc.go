// Package httplimit is net/http middleware that rate-limits requests with a
// limiter.Limiter, answers the ones over the limit with 429 Too Many Requests and
// Retry-After, and tells clients their quota in the RateLimit-Policy and RateLimit
// headers of the IETF draft.
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
// Middleware, ByIP and ByHeader return an error wrapping limiter.ErrInvalidConfig for an
// argument or option they cannot use, so a mistake shows at start-up, not as a 500 on
// every request.
//
// # Keys
//
// Every key has its own limit. A KeyFunc computes it from the request: ByIP (the client's
// address, optionally behind trusted reverse proxies), ByHeader (an API key, a tenant ID)
// or any function of your own, for example one that reads the authenticated user from the
// request's context.
//
// # What the client sees
//
//	request                               status  next handler  headers
//	allowed                               next's  called        RateLimit-Policy, RateLimit
//	denied                                429     not called    Retry-After, RateLimit-Policy, RateLimit
//	denied, cost above what the limit     429     not called    RateLimit-Policy, RateLimit without t, no
//	  can ever grant                                            Retry-After: waiting would not help
//	store closed                          503     not called    none (error handler)
//	store down, FailOpen                  next's  called        none
//	store down, Fallback allows           next's  called        none
//	store down, Fallback denies           429     not called    Retry-After
//	store down, FailClosed                503     not called    none (error handler)
//	KeyFunc error wrapping ErrMissingKey  400     not called    none (error handler)
//	other KeyFunc error, negative cost    500     not called    none (error handler)
//	client gone during a WithWait delay   503     not called    none (error handler)
//	cost 0                                next's  called        none (the request is exempt)
//
// WithDeniedHandler and WithErrorHandler replace the 429 and error responses;
// WithoutHeaders leaves the RateLimit headers out. With WithWait a request that would be
// denied is delayed instead when its permits come within the bound.
//
// # Headers
//
// The headers follow draft-ietf-httpapi-ratelimit-headers-11 (May 2026,
// https://datatracker.ietf.org/doc/draft-ietf-httpapi-ratelimit-headers/), whose fields
// are Structured Fields (RFC 9651) lists with one item per policy, named by an sf-string;
// the middleware sends one item, named "default" unless WithPolicyName says otherwise:
//
//	RateLimit-Policy: "default";q=100;w=60
//	RateLimit: "default";r=42;t=17
//
// The values come from the limiter's Decision and algorithm:
//
//   - q (quota) is Decision.Limit: FixedWindow, SlidingWindowLog and
//     SlidingWindowCounter Limit, TokenBucket and GCRA Burst, LeakyBucket Capacity,
//     SmoothBursty Rate × MaxBurstSeconds rounded up.
//   - w (window, seconds) is the Window of the algorithm's algo.Quota, the span over
//     which it grants q from a fresh start: Window for the window algorithms; Burst / Rate
//     for TokenBucket and GCRA; Capacity / Rate for LeakyBucket; MaxBurstSeconds for
//     SmoothBursty. It is rounded up to whole seconds, at least 1 (the draft has no
//     sub-second windows), so the advertised rate q/w is never above the real one.
//     SmoothWarmingUp, whose rate depends on how warm it is, and algorithms that do not
//     implement algo.Quoter get no w (the parameter is optional).
//   - r (remaining) is Decision.Remaining: what a request arriving right after this one
//     could still take without waiting.
//   - t (effective window, seconds) is, on an allowed request, Decision.ResetAfter
//     rounded up: the time until the key is back to a fresh state with the whole quota
//     available (less the time a WithWait request spent waiting). A client that spends
//     at most r within t never hits this limit. It is left out when ResetAfter is
//     algo.Never. On a denied request t equals Retry-After, as the draft's Section 6 asks
//     (Retry-After should not end before the effective window). On a request whose cost
//     is more than the limit can ever grant (RetryAfter == algo.Never) t is left out
//     with Retry-After: no moment would grant it, and q says the most a request may cost.
//
// Counts are clamped to 999,999,999,999,999, the largest Structured Field Integer.
//
// Retry-After, on a 429, is Decision.RetryAfter in whole seconds rounded up, and at least
// 1: a wait of 1.2 s is sent as 2 and one of 250 ms as 1, so a client that honours it is
// never early, and it is never "0". When the request can never be granted (its cost is
// more than the limit: RetryAfter == algo.Never) Retry-After is left out.
//
// # Time
//
// The store decides what "now" is and the limiter's clock, by default the store's (or
// limiter.WithClock), is what WithWait sleeps on, so tests run the middleware over a store
// on a clockx.Fake: no real sleeps.
package httplimit
