package echolimit

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/httplimit"
)

// Middleware returns Echo middleware that limits requests with l, one limit per key that
// key computes, as httplimit.Middleware(l, key, opts...) does for net/http; it returns
// the same errors, wrapping algo.ErrInvalidConfig, for the same arguments. The
// returned middleware is safe for concurrent use.
func Middleware(l *limiter.Limiter, key httplimit.KeyFunc, opts ...httplimit.Option) (echo.MiddlewareFunc, error) {
	mw, err := httplimit.Middleware(l, key, opts...)
	if err != nil {
		return nil, err
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) (err error) {
			// httplimit passes the writer it was given on unchanged, so the next handler
			// keeps writing through c.Response(); only the request is handed back.
			mw(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
				c.SetRequest(r)
				err = next(c)
			})).ServeHTTP(c.Response(), c.Request())
			return err
		}
	}, nil
}
