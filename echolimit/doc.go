// Package echolimit rate-limits Echo (github.com/labstack/echo/v4) routes with a
// limiter.Limiter, exactly as package httplimit limits net/http handlers: it runs an
// httplimit middleware around the rest of the Echo chain, so the keys (httplimit.ByIP,
// httplimit.ByHeader or any httplimit.KeyFunc), the 429 response and its body, Retry-After,
// the RateLimit-Policy and RateLimit headers (one item per rule of a composite), the
// failure policy, the wait mode (httplimit.WithWait), the cost (httplimit.WithCost) and
// every other httplimit.Option behave the same; docs/httplimit.md describes them.
//
//	l, err := limiter.New(st, algo.FixedWindow{Limit: 100, Window: time.Minute})
//	...
//	key, err := httplimit.ByIP()
//	...
//	mw, err := echolimit.Middleware(l, key, httplimit.WithProblemDetails())
//	...
//	e := echo.New()
//	e.Use(mw)
//
// A request that is let through goes on to the next handler, with the headers already
// set, and its error is returned to Echo; one that is not is answered by httplimit (the
// middleware then returns nil, so Echo's error handler does not write a second response).
// ByIP reads the connection's address (http.Request.RemoteAddr) and, from trusted proxies
// only, X-Forwarded-For: Echo's IPExtractor is not consulted, so the key is the same
// whichever framework serves the request.
//
// This is a module of its own (github.com/ratekit/limiter/echolimit) so that the core
// module does not depend on Echo.
package echolimit
