package ginlimit

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/httplimit"
)

// Middleware returns gin middleware that limits requests with l, one limit per key that
// key computes, as httplimit.Middleware(l, key, opts...) does for net/http; it returns
// the same errors, wrapping algo.ErrInvalidConfig, for the same arguments. The
// returned handler is safe for concurrent use.
func Middleware(l *limiter.Limiter, key httplimit.KeyFunc, opts ...httplimit.Option) (gin.HandlerFunc, error) {
	mw, err := httplimit.Middleware(l, key, opts...)
	if err != nil {
		return nil, err
	}
	return func(c *gin.Context) {
		passed := false
		// The httplimit handler is built per request around this request's gin context:
		// one small allocation, and the chain runs inside it, after the headers are set.
		mw(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			passed = true
			c.Request = r
			c.Next()
		})).ServeHTTP(c.Writer, c.Request)
		if !passed {
			c.Abort()
		}
	}, nil
}
