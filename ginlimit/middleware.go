package ginlimit

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/internal/adapter"
)

// Middleware returns gin middleware that limits requests with l, one limit per key that
// key computes, as httplimit.Middleware(l, key, opts...) does for net/http; it returns
// the same errors, wrapping algo.ErrInvalidConfig, for the same arguments. The
// returned handler is safe for concurrent use.
func Middleware(l *limiter.Limiter, key httplimit.KeyFunc, opts ...httplimit.Option) (gin.HandlerFunc, error) {
	// Built once (internal/adapter): a request let through goes on down gin's chain with
	// the request httplimit hands on.
	h, err := adapter.Handler(l, key, opts, func(cw *ctxWriter, r *http.Request) {
		cw.passed = true
		cw.c.Request = r
		cw.c.Next()
	})
	if err != nil {
		return nil, err
	}
	return func(c *gin.Context) {
		cw := writers.Get()
		cw.ResponseWriter, cw.c = c.Writer, c
		h.ServeHTTP(cw, c.Request)
		passed := cw.passed
		writers.Put(cw)
		if !passed {
			c.Abort()
		}
	}, nil
}

// ctxWriter is the writer a request is served with: gin's (its Flush, Hijack and the rest
// too, for a handler that asserts them), and the request's context.
type ctxWriter struct {
	gin.ResponseWriter
	c      *gin.Context
	passed bool // the request went on down the chain
}

// Unwrap returns gin's writer (http.ResponseController).
func (w *ctxWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// WrittenResponse returns the status and header gin's chain wrote (adapter.Responder):
// httplimit.WithChargeAfter reads them.
func (w *ctxWriter) WrittenResponse() (int, http.Header) {
	return w.ResponseWriter.Status(), w.ResponseWriter.Header()
}

var writers adapter.Pool[ctxWriter]
