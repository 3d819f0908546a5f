package fiberlimit

import (
	"bytes"
	"errors"
	"net/http"
	"net/url"

	"github.com/gofiber/fiber/v2"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/httplimit"
	"github.com/ratekit/limiter/internal/adapter"
)

// Middleware returns Fiber middleware that limits requests with l, one limit per key that
// key computes, as httplimit.Middleware(l, key, opts...) does for net/http; it returns
// the same errors, wrapping algo.ErrInvalidConfig, for the same arguments. A request
// whose URI does not parse as a URL gets fiber.ErrBadRequest. The returned handler is
// safe for concurrent use.
func Middleware(l *limiter.Limiter, key httplimit.KeyFunc, opts ...httplimit.Option) (fiber.Handler, error) {
	// Built once (internal/adapter): a request let through goes on down Fiber's chain,
	// the headers httplimit set copied to Fiber's response first, so that a handler may
	// still change them.
	h, err := adapter.Handler(l, key, opts, func(w *writer, _ *http.Request) {
		w.copyHeader()
		w.next = w.c.Next()
	})
	if err != nil {
		return nil, err
	}
	return func(c *fiber.Ctx) error {
		r, err := request(c)
		if err != nil {
			return fiber.ErrBadRequest
		}
		w := &writer{c: c}
		h.ServeHTTP(w, r)
		return w.next
	}, nil
}

// request builds the net/http view of c's request that KeyFuncs and cost functions read.
// Every string is copied: fasthttp reuses its buffers once the request ends, and a key
// outlives it in the store. The body is not: it is read from fasthttp only if they read
// it (see body).
func request(c *fiber.Ctx) (*http.Request, error) {
	fc := c.Context()
	uri := string(fc.RequestURI())
	u, err := url.ParseRequestURI(uri)
	if err != nil {
		return nil, err
	}
	r := &http.Request{
		Method:     string(fc.Method()),
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     make(http.Header),
		Host:       string(fc.Host()),
		RemoteAddr: fc.RemoteAddr().String(),
		RequestURI: uri,
		TLS:        fc.TLSConnectionState(),
	}
	if fc.RequestBodyStream() == nil {
		// fasthttp has read the body already: its length costs nothing.
		r.ContentLength = int64(len(fc.PostBody()))
	} else {
		// A streamed body (StreamRequestBody): its length as the client announced it,
		// -1 when unknown (chunked), as net/http reports it.
		r.ContentLength = max(-1, int64(fc.Request.Header.ContentLength()))
	}
	if r.ContentLength == 0 {
		r.Body = http.NoBody
	} else {
		r.Body = &body{c: c}
	}
	// Add, not Set: a header sent on several lines (X-Forwarded-For through several
	// proxies) keeps every line, as net/http keeps them.
	fc.Request.Header.VisitAll(func(k, v []byte) {
		r.Header.Add(string(k), string(v))
	})
	return r.WithContext(c.UserContext()), nil
}

// body is the request's body as a KeyFunc or a cost function reads it, taken from
// fasthttp at their first Read, not before: the middleware itself never touches the body,
// so a handler after it that streams it (StreamRequestBody) gets the whole stream, and a
// denied upload is never read. One that is read is fasthttp's PostBody, as the handlers'
// c.Body() reads it: a stream is then read in full (and no longer streams), the body kept
// for the handlers. It is read during the middleware's call only, like fasthttp's buffers.
type body struct {
	c *fiber.Ctx
	r *bytes.Reader
}

func (b *body) Read(p []byte) (int, error) {
	if b.r == nil {
		b.r = bytes.NewReader(b.c.Context().PostBody())
	}
	return b.r.Read(p)
}

func (b *body) Close() error { return nil }

// writer is the http.ResponseWriter httplimit answers through: it holds the headers until
// the status is written, then writes status, headers and body to Fiber's response.
type writer struct {
	c     *fiber.Ctx
	h     http.Header
	wrote bool
	next  error // what the rest of the chain returned, when the request went on
}

func (w *writer) Header() http.Header {
	if w.h == nil {
		w.h = make(http.Header)
	}
	return w.h
}

func (w *writer) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	w.copyHeader()
	w.c.Status(code)
}

func (w *writer) Write(b []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return w.c.Write(b)
}

// WrittenResponse returns the status and header Fiber's chain wrote (adapter.Responder),
// copied from fasthttp's response: httplimit.WithChargeAfter reads them. When the chain
// returned an error, which Fiber answers after the middleware, the status is the one
// Fiber's default error handler sends for it: a fiber.Error's code, else 500.
func (w *writer) WrittenResponse() (int, http.Header) {
	status := w.c.Response().StatusCode()
	if w.next != nil {
		status = fiber.StatusInternalServerError
		if fe := (*fiber.Error)(nil); errors.As(w.next, &fe) {
			status = fe.Code
		}
	}
	h := make(http.Header)
	w.c.Response().Header.VisitAll(func(k, v []byte) { h.Add(string(k), string(v)) })
	return status, h
}

// copyHeader adds the headers set so far to Fiber's response, every line of each.
func (w *writer) copyHeader() {
	rh := &w.c.Response().Header
	for k, vs := range w.h {
		for _, v := range vs {
			rh.Add(k, v)
		}
	}
}
