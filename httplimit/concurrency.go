package httplimit

import (
	"context"
	"errors"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/ratekit/limiter/adaptive"
	"github.com/ratekit/limiter/internal/rlheader"
)

// DefaultConcurrencyRetryAfter is the Retry-After a shed request gets unless
// ConcurrencyRetryAfter sets another.
const DefaultConcurrencyRetryAfter = time.Second

// ConcurrencyOption configures Concurrency.
type ConcurrencyOption interface {
	applyConcurrency(*concurrencyOptions)
}

type concurrencyOptions struct {
	policy     string // quoted sf-string; "" for no RateLimit headers
	retryAfter string // seconds
	shed       http.Handler
	outcome    func(*http.Request, int) adaptive.Outcome
}

type concurrencyOptionFunc func(*concurrencyOptions)

func (f concurrencyOptionFunc) applyConcurrency(o *concurrencyOptions) { f(o) }

// ConcurrencyRetryAfter sets the Retry-After of a shed request, rounded up to whole
// seconds, at least 1; default DefaultConcurrencyRetryAfter (1 s). An adaptive limit
// frees places as fast as requests finish, so a short hint suits it.
func ConcurrencyRetryAfter(d time.Duration) ConcurrencyOption {
	return concurrencyOptionFunc(func(o *concurrencyOptions) { o.retryAfter = retryAfterValue(d) })
}

// concurrencyPolicyName is the policy name of the RateLimit headers Concurrency sends
// unless ConcurrencyHeaders sets another.
const concurrencyPolicyName = "concurrency"

// ConcurrencyHeaders sets the policy name of the RateLimit-Policy and RateLimit headers
// that Concurrency sends, default "concurrency"; characters outside
// printable ASCII are dropped, and an empty name sends no RateLimit headers at all. The
// policy is the limit on requests in flight, in the draft's "concurrent-requests" unit,
// without a window:
//
//	RateLimit-Policy: "concurrency";q=40;qu="concurrent-requests"
//	RateLimit: "concurrency";r=12
//
// q is the limiter's limit when the request arrives, r the places still free once it is
// admitted (0 on a shed request). An adaptive limit moves, so both are snapshots.
func ConcurrencyHeaders(name string) ConcurrencyOption {
	return concurrencyOptionFunc(func(o *concurrencyOptions) {
		o.policy = ""
		if name = rlheader.CleanName(name); name != "" {
			o.policy = rlheader.QuoteName(name)
		}
	})
}

// ConcurrencyShedHandler sets the handler that answers a shed request. It is called with
// Retry-After already set and must write the status itself, normally 503. The default
// writes 503 Service Unavailable with a plain-text body. A nil h keeps it.
func ConcurrencyShedHandler(h http.Handler) ConcurrencyOption {
	return concurrencyOptionFunc(func(o *concurrencyOptions) {
		if h != nil {
			o.shed = h
		}
	})
}

// ConcurrencyOutcome sets how a served request is reported to the limiter, from the
// request (its context tells a deadline from a departed client) and the status the
// handler wrote (200 when it wrote none). The default is DefaultConcurrencyOutcome; a
// nil f keeps it.
func ConcurrencyOutcome(f func(r *http.Request, status int) adaptive.Outcome) ConcurrencyOption {
	return concurrencyOptionFunc(func(o *concurrencyOptions) {
		if f != nil {
			o.outcome = f
		}
	})
}

// DefaultConcurrencyOutcome reports a request whose deadline passed, or that answered
// 504 Gateway Timeout, as adaptive.Timeout; one that answered 503 or 429 (its own
// downstream was overloaded) as adaptive.Overload; one whose client went away as
// adaptive.Ignore; and every other one, errors included, as adaptive.Success: its latency
// is what the limit learns from.
func DefaultConcurrencyOutcome(r *http.Request, status int) adaptive.Outcome {
	switch err := r.Context().Err(); {
	case errors.Is(err, context.DeadlineExceeded):
		return adaptive.Timeout
	case err != nil:
		return adaptive.Ignore
	}
	switch status {
	case http.StatusGatewayTimeout:
		return adaptive.Timeout
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		return adaptive.Overload
	}
	return adaptive.Success
}

// Concurrency returns net/http middleware that admits requests through the adaptive
// concurrency limiter l: a request is served while fewer than l's limit are in flight,
// and its outcome and latency then move the limit (see package adaptive). A request that
// l sheds (adaptive.ErrLimitReached, adaptive.ErrOverloaded) gets 503 Service Unavailable
// with Retry-After; one whose context is already done gets 503 without it. Admitted and
// shed requests carry the RateLimit headers of the limit in "concurrent-requests" (see
// ConcurrencyHeaders).
//
// The handler's writer has http.Flusher, http.Hijacker and io.ReaderFrom exactly when the
// server's writer has them, and Unwrap for http.ResponseController.
//
// A panicking handler still releases its place (reported as adaptive.Ignore), and so
// does a hijacked connection, without asking the outcome function. A nil l
// or next handler answers every request with 500. The returned handler is safe for
// concurrent use.
func Concurrency(l *adaptive.Limiter, opts ...ConcurrencyOption) func(http.Handler) http.Handler {
	o := concurrencyOptions{
		policy:     rlheader.QuoteName(concurrencyPolicyName),
		retryAfter: retryAfterValue(DefaultConcurrencyRetryAfter),
		shed:       http.HandlerFunc(serviceUnavailable),
		outcome:    DefaultConcurrencyOutcome,
	}
	for _, opt := range opts {
		if opt != nil {
			opt.applyConcurrency(&o)
		}
	}
	return func(next http.Handler) http.Handler {
		if l == nil || next == nil {
			return http.HandlerFunc(internalError)
		}
		return &concurrencyHandler{l: l, next: next, o: o}
	}
}

type concurrencyHandler struct {
	l    *adaptive.Limiter
	next http.Handler
	o    concurrencyOptions
}

func (h *concurrencyHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	limit := h.l.Limit()
	tok, err := h.l.Acquire(r.Context())
	if err != nil {
		if errors.Is(err, adaptive.ErrLimitReached) || errors.Is(err, adaptive.ErrOverloaded) {
			w.Header().Set("Retry-After", h.o.retryAfter)
			h.setHeaders(w, limit, 0)
			h.o.shed.ServeHTTP(w, r)
			return
		}
		serviceUnavailable(w, r) // the request's context is done
		return
	}
	h.setHeaders(w, limit, int64(limit-h.l.InFlight()))
	sw := &statusWriter{ResponseWriter: w}
	served := false
	defer func() {
		if !served { // the handler panicked: free the place, learn nothing
			tok.Done(adaptive.Ignore)
		}
	}()
	h.next.ServeHTTP(sw.wrap(), r)
	served = true
	if sw.hijacked { // a long-lived connection's duration is not a latency to learn from
		tok.Done(adaptive.Ignore)
		return
	}
	status := sw.status
	if status == 0 {
		status = http.StatusOK
	}
	tok.Done(h.o.outcome(r, status))
}

// unitConcurrent is the quota unit of Concurrency's policy.
const unitConcurrent = `"concurrent-requests"`

func (h *concurrencyHandler) setHeaders(w http.ResponseWriter, limit int, free int64) {
	if h.o.policy != "" {
		it := rlheader.Item{Name: h.o.policy, Q: int64(limit), R: free, T: -1, HasR: true}
		rlheader.Add(w.Header().Add, []rlheader.Item{it}, unitConcurrent, "")
	}
}

// retryAfterValue is d in whole seconds rounded up, at least 1.
func retryAfterValue(d time.Duration) string {
	s := int64(math.Ceil(d.Seconds()))
	return strconv.FormatInt(max(s, 1), 10)
}

func serviceUnavailable(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, http.StatusText(http.StatusServiceUnavailable), http.StatusServiceUnavailable)
}

func internalError(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, http.StatusText(http.StatusInternalServerError), http.StatusInternalServerError)
}
