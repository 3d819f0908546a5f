package ginlimit

import (
	"net/http"
	"sync"

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
	// The httplimit handler is built once; each request reaches the rest of the gin chain
	// through the writer it is served with, which carries the request's gin context
	// (httplimit hands its writer on to the next handler).
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := find(w)
		if cw == nil { // not served by Middleware's handler below: cannot happen
			http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
			return
		}
		cw.passed = true
		cw.c.Request = r
		cw.c.Next()
	}))
	return func(c *gin.Context) {
		cw := writers.Get().(*ctxWriter)
		cw.ResponseWriter, cw.c = c.Writer, c
		h.ServeHTTP(cw, c.Request)
		passed := cw.passed
		*cw = ctxWriter{}
		writers.Put(cw)
		if !passed {
			c.Abort()
		}
	}, nil
}

// ctxWriter is the writer a request is served with: gin's, and the request's context.
type ctxWriter struct {
	gin.ResponseWriter
	c      *gin.Context
	passed bool // the request went on down the chain
}

// Unwrap returns gin's writer (http.ResponseController).
func (w *ctxWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writers reuses the ctxWriters: a request costs no allocation of its own.
var writers = sync.Pool{New: func() any { return new(ctxWriter) }}

// find returns the ctxWriter w is or wraps (through Unwrap), or nil.
func find(w http.ResponseWriter) *ctxWriter {
	for {
		if cw, ok := w.(*ctxWriter); ok {
			return cw
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return nil
		}
		w = u.Unwrap()
	}
}
