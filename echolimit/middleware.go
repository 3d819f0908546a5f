package echolimit

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/internal/adapter"
)

// Middleware returns Echo middleware that limits requests with l, one limit per key that
// key computes, as httplimit.Middleware(l, key, opts...) does for net/http; it returns
// the same errors, wrapping algo.ErrInvalidConfig, for the same arguments. The
// returned middleware is safe for concurrent use.
func Middleware(l *limiter.Limiter, key httplimit.KeyFunc, opts ...httplimit.Option) (echo.MiddlewareFunc, error) {
	// Built once (internal/adapter), not around each next: Echo applies middleware added
	// with Use on every request. A request let through reaches next with the request
	// httplimit hands on; next keeps writing through c.Response().
	h, err := adapter.Handler(l, key, opts, func(cw *ctxWriter, r *http.Request) {
		cw.c.SetRequest(r)
		cw.err = cw.next(cw.c)
	})
	if err != nil {
		return nil, err
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			cw := writers.Get()
			cw.Response, cw.c, cw.next = c.Response(), c, next
			h.ServeHTTP(cw, c.Request())
			err := cw.err
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

// WrittenResponse returns the status and header Echo's chain wrote (adapter.Responder):
// httplimit.WithChargeAfter reads them. When the chain returned an error that Echo has not
// answered yet, the status is the one Echo's default error handler sends for it: an
// echo.HTTPError's code, else 500.
func (w *ctxWriter) WrittenResponse() (int, http.Header) {
	status := w.Response.Status
	if w.err != nil && !w.Response.Committed {
		status = http.StatusInternalServerError
		if he := (*echo.HTTPError)(nil); errors.As(w.err, &he) {
			status = he.Code
		}
	}
	return status, w.Response.Header()
}

var writers adapter.Pool[ctxWriter]
