package httplimit

import (
	"context"
	"fmt"
	"net/http"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
)

// serve runs the next handler for a request the check let through, then charges what
// WithChargeAfter says it used.
func (h *handler) serve(w http.ResponseWriter, r *http.Request, k string) {
	if h.o.charge == nil {
		h.next.ServeHTTP(w, r)
		return
	}
	var status int
	var header http.Header
	if rw, ok := findResponder(w); ok {
		// A framework adapter: its handlers write through the framework's own writer,
		// which the adapter reads.
		h.next.ServeHTTP(w, r)
		status, header = rw.WrittenResponse()
	} else {
		sw := &statusWriter{ResponseWriter: w}
		h.next.ServeHTTP(sw.wrap(), r)
		status, header = sw.status, w.Header()
		if status == 0 && !sw.hijacked {
			status = http.StatusOK // what net/http sends for a handler that wrote nothing
		}
	}
	n := h.o.charge(r, status, header)
	if n <= 0 {
		return
	}
	// The work is done even if the client has gone: the charge must reach the store.
	d, err := h.l.Charge(context.WithoutCancel(r.Context()), k, n)
	if err != nil && !d.Allowed {
		// The response is on its way: the error handler may see the error, not touch it.
		h.o.onError(dropWriter{}, r, fmt.Errorf("httplimit: charging %d after the response: %w", n, err))
	}
	// else: charged, or the failure policy answered (FailOpen, Fallback): the limiter's
	// own error handler counts that.
}

// responder is implemented by the writer of a framework adapter (internal/adapter), whose
// handlers write the response through the framework's writer, not through the one the
// middleware hands on: WrittenResponse returns the status and header they wrote, once the
// framework's chain has returned.
type responder interface {
	WrittenResponse() (status int, header http.Header)
}

// findResponder returns the responder that w is or wraps (through Unwrap).
func findResponder(w http.ResponseWriter) (responder, bool) {
	for {
		if rw, ok := w.(responder); ok {
			return rw, true
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return nil, false
		}
		w = u.Unwrap()
	}
}

// dropWriter is the writer the error handler gets for a charge that failed: the response
// has been written already, so what the error handler writes is dropped.
type dropWriter struct{}

func (dropWriter) Header() http.Header         { return http.Header{} }
func (dropWriter) Write(b []byte) (int, error) { return len(b), nil }
func (dropWriter) WriteHeader(int)             {}

// chargeable records an error unless every rule of l can be charged (WithChargeAfter).
func (o *options) chargeable(l *limiter.Limiter) {
	rules := l.Rules()
	if rules == nil {
		rules = []*limiter.Limiter{l}
	}
	for _, rule := range rules {
		if a := rule.Algorithm(); a != nil && algo.CapabilitiesOf(a)&algo.Chargeable == 0 {
			o.invalid("WithChargeAfter: %s cannot be charged (it does not state algo.Chargeable)", a.Name())
			return
		}
	}
}
