// Package fiberlimit rate-limits Fiber v2 (github.com/gofiber/fiber/v2) routes with a
// limiter.Limiter, exactly as package httplimit limits net/http handlers: it runs an
// httplimit middleware for each request, so the keys (httplimit.ByIP, httplimit.ByHeader
// or any httplimit.KeyFunc), the 429 response and its body, Retry-After, the
// RateLimit-Policy and RateLimit headers (one item per rule of a composite), the failure
// policy, the wait mode (httplimit.WithWait), the cost (httplimit.WithCost) and every
// other httplimit.Option behave the same; docs/httplimit.md describes them.
//
//	l, err := limiter.New(st, algo.FixedWindow{Limit: 100, Window: time.Minute})
//	...
//	key, err := httplimit.ByIP()
//	...
//	mw, err := fiberlimit.Middleware(l, key, httplimit.WithProblemDetails())
//	...
//	app := fiber.New()
//	app.Use(mw)
//
// Fiber runs on fasthttp, not net/http. For each request the middleware builds the
// http.Request a KeyFunc and a cost function read (method, URL, Host, headers,
// RemoteAddr, ContentLength, and Fiber's user context, c.UserContext, whose end stops a
// WithWait delay), with every string copied out of fasthttp's reused buffers: a key is
// kept by the store after the request ends. The middleware does not read the body: a
// handler after it that streams the body (fiber.Config.StreamRequestBody) gets the whole
// stream, and a denied upload costs nothing of its size. Only a KeyFunc or a cost function
// that reads the http.Request's Body reads it, as c.Body() would (a stream in full; the
// handlers then find it in c.Body(), no longer as a stream). The headers and the answer
// httplimit writes go to Fiber's response. A request that is let through continues the
// chain (c.Next) and its error is returned; one that is not is answered and the chain
// stops.
//
// ByIP reads the connection's address and, from trusted proxies only, X-Forwarded-For:
// Fiber's own ProxyHeader and c.IP are not consulted, so the key is the same whichever
// framework serves the request.
//
// This is a module of its own (github.com/ratekit/limiter/fiberlimit) so that the core
// module does not depend on Fiber.
package fiberlimit
