package echolimit

import (
	"net/http"
	"sync"

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
	// The httplimit handler is built once: Echo applies middleware added with Use on every
	// request, so building it around next would build it per request. Each request
	// reaches next through the writer it is served with, which carries the request's
	// Echo context and next (httplimit hands its writer on unchanged, so next keeps
	// writing through c.Response(); only the request is handed back).
	h := mw(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := find(w)
		if cw == nil { // not served by the handler below: cannot happen
			http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
			return
		}
		cw.c.SetRequest(r)
		cw.err = cw.next(cw.c)
	}))
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			cw := writers.Get().(*ctxWriter)
			cw.Response, cw.c, cw.next = c.Response(), c, next
			h.ServeHTTP(cw, c.Request())
			err := cw.err
			*cw = ctxWriter{}
			writers.Put(cw)
			return err
		}
	}, nil
}

// ctxWriter is the writer a request is served with: Echo's, the request's context, the
// handler after the middleware and what it returned.
type ctxWriter struct {
	*echo.Response // its Flush and Hijack too, for an error handler that asserts them
	c              echo.Context
	next           echo.HandlerFunc
	err            error
}

// Unwrap returns Echo's writer (http.ResponseController).
func (w *ctxWriter) Unwrap() http.ResponseWriter { return w.Response }

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
