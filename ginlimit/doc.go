// Package ginlimit rate-limits gin (github.com/gin-gonic/gin) routes with a
// limiter.Limiter, exactly as package httplimit limits net/http handlers: it runs an
// httplimit middleware around the rest of the gin chain, so the keys (httplimit.ByIP,
// httplimit.ByHeader or any httplimit.KeyFunc), the 429 response and its body, Retry-After,
// the RateLimit-Policy and RateLimit headers (one item per rule of a composite), the
// failure policy, the wait mode (httplimit.WithWait), the cost (httplimit.WithCost) and
// every other httplimit.Option behave the same; docs/httplimit.md describes them.
//
//	l, err := limiter.New(st, algo.FixedWindow{Limit: 100, Window: time.Minute})
//	...
//	key, err := httplimit.ByIP()
//	...
//	mw, err := ginlimit.Middleware(l, key, httplimit.WithProblemDetails())
//	...
//	r := gin.New()
//	r.Use(mw)
//
// A request that is let through continues the chain (c.Next) with the headers already
// set; one that is not is answered and the chain aborted (c.Abort), so no later handler
// runs. ByIP reads the connection's address (http.Request.RemoteAddr) and, from trusted
// proxies only, X-Forwarded-For: gin's own ClientIP settings are not consulted, so the
// key is the same whichever framework serves the request.
//
// This is a module of its own (github.com/ratekit/limiter/ginlimit) so that the core
// module does not depend on gin.
package ginlimit
