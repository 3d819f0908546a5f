// Package adapter runs httplimit's middleware inside the web frameworks whose handlers are
// not http.Handlers (ginlimit, echolimit, fiberlimit), one way for all of them, so that
// each adapter only translates its framework's request and response.
//
// The middleware is built once, around a handler that lets a request through. Each
// request is served with the adapter's own writer W, which carries what letting it
// through needs (the framework's context, the handler after the middleware, what that
// returned); httplimit hands its writer on to the next handler, and the handler finds the
// W behind it.
package adapter

import (
	"net/http"
	"sync"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/httplimit"
)

// Responder is what every adapter's W implements, since the framework's handlers write
// the response through the framework's own writer, not through the one httplimit hands
// on: WrittenResponse returns the status and header of that response once the framework's
// chain has returned (for a chain that returned an error, the status the framework's
// default error handler sends for it). httplimit's WithChargeAfter reads the response
// through it, finding the method on the writer it serves with as it finds Unwrap.
type Responder interface {
	WrittenResponse() (status int, header http.Header)
}

// Handler returns httplimit.Middleware(l, key, opts...) built around a handler that calls
// pass with the W the request was served with (or wraps, found through Unwrap) and the
// request httplimit hands on: pass continues the framework's chain. A request served with
// no W, which only a misuse of the returned handler can cause, gets 500. The errors are
// httplimit.Middleware's.
func Handler[W interface {
	http.ResponseWriter
	Responder
}](l *limiter.Limiter, key httplimit.KeyFunc, opts []httplimit.Option, pass func(W, *http.Request)) (http.Handler, error) {
	mw, err := httplimit.Middleware(l, key, opts...)
	if err != nil {
		return nil, err
	}
	return mw(http.HandlerFunc(func(hw http.ResponseWriter, r *http.Request) {
		w, ok := find[W](hw)
		if !ok {
			http.Error(hw, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
			return
		}
		pass(w, r)
	})), nil
}

// find returns the W that w is or wraps (through Unwrap).
func find[W http.ResponseWriter](w http.ResponseWriter) (W, bool) {
	for {
		if cw, ok := w.(W); ok {
			return cw, true
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			var none W
			return none, false
		}
		w = u.Unwrap()
	}
}

// Pool reuses the adapter's writers, so that a request costs no allocation of its own.
// The zero value is ready to use.
type Pool[T any] struct{ p sync.Pool }

// Get returns a zero T from the pool, or a new one.
func (p *Pool[T]) Get() *T {
	if t, ok := p.p.Get().(*T); ok {
		return t
	}
	return new(T)
}

// Put zeroes t, dropping what it refers to, and keeps it for a later Get.
func (p *Pool[T]) Put(t *T) {
	var zero T
	*t = zero
	p.p.Put(t)
}
