package httplimit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/ratekit/limiter/adaptive"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/rlheader"
)

// defaultConcurrencyRetryAfter is the Retry-After a shed request gets unless
// ConcurrencyRetryAfter sets another.
const defaultConcurrencyRetryAfter = time.Second

// concurrencyPolicyName is the policy name of the RateLimit headers Concurrency sends
// unless WithPolicyName sets another.
const concurrencyPolicyName = "concurrency"

// ConcurrencyRetryAfter sets the Retry-After of a request Concurrency sheds, rounded up to
// whole seconds, at least 1; default 1 s. An adaptive limit frees places as fast as
// requests finish, so a short hint suits it. A d ≤ 0 is an error, and so is the option
// given to Middleware.
func ConcurrencyRetryAfter(d time.Duration) Option {
	return optionFunc(func(o *options) {
		o.concurrencyOnly("ConcurrencyRetryAfter")
		if d <= 0 {
			o.invalid("ConcurrencyRetryAfter(%v): the hint must be > 0", d)
			return
		}
		o.retryAfter = retryAfterValue(d)
	})
}

// ConcurrencyOutcome sets how Concurrency reports a served request to the limiter, from
// the request (its context tells a deadline from a departed client) and the status the
// handler wrote (200 when it wrote none). The default is DefaultConcurrencyOutcome; a nil
// f is an error, and so is the option given to Middleware.
func ConcurrencyOutcome(f func(r *http.Request, status int) adaptive.Outcome) Option {
	return optionFunc(func(o *options) {
		o.concurrencyOnly("ConcurrencyOutcome")
		if f == nil {
			o.invalid("ConcurrencyOutcome(nil): the function is nil")
			return
		}
		o.outcome = f
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
// l sheds gets 503 Service Unavailable with Retry-After; one whose context is already done
// gets 503 without it. Admitted and shed requests carry the RateLimit headers of the limit
// in "concurrent-requests":
//
//	RateLimit-Policy: "concurrency";q=40;qu="concurrent-requests"
//	RateLimit: "concurrency";r=12
//
// q is the limiter's limit when the request arrives, r the places still free once it is
// admitted (0 on a shed request). An adaptive limit moves, so both are snapshots.
//
// Options: WithPolicyName names the policy (default "concurrency"), WithoutHeaders drops
// the RateLimit headers, WithDeniedHandler answers a shed request (called with
// Retry-After set; it writes the status itself, normally 503), ConcurrencyRetryAfter and
// ConcurrencyOutcome are Concurrency's own. Nil options are skipped. A nil l, an option
// with a value it cannot use, or one of Middleware's own options (WithCost, WithWait,
// WithErrorHandler, WithQuotaUnit, WithPartitionKey, WithProblemDetails) makes Concurrency
// return an error wrapping algo.ErrInvalidConfig that names it, and no middleware.
//
// The handler's writer has http.Flusher, http.Hijacker and io.ReaderFrom exactly when the
// server's writer has them, and Unwrap for http.ResponseController.
//
// A panicking handler still releases its place (reported as adaptive.Ignore), and so
// does a hijacked connection, without asking the outcome function. A nil next handler,
// which only shows when the middleware wraps it, answers every request with 500. The
// returned handler is safe for concurrent use.
func Concurrency(l *adaptive.Limiter, opts ...Option) (func(http.Handler) http.Handler, error) {
	if l == nil {
		return nil, fmt.Errorf("%w: httplimit.Concurrency: the limiter is nil", algo.ErrInvalidConfig)
	}
	o := defaultOptions("Concurrency")
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	if o.err == nil && o.middlewareOpt != "" {
		o.invalid("%s applies to Middleware, not to Concurrency", o.middlewareOpt)
	}
	if o.err != nil {
		return nil, o.err
	}
	c := concurrencyOptions{
		retryAfter: o.retryAfter,
		shed:       http.HandlerFunc(serviceUnavailable),
		outcome:    o.outcome,
	}
	if o.deniedSet {
		c.shed = o.denied
	}
	if !o.noHeader {
		name := concurrencyPolicyName
		if o.policySet {
			name = o.policy
		}
		c.policy = rlheader.QuoteName(name)
	}
	return func(next http.Handler) http.Handler {
		if next == nil {
			return http.HandlerFunc(internalError)
		}
		return &concurrencyHandler{l: l, next: next, o: c}
	}, nil
}

// concurrencyOptions are the options of Concurrency, resolved.
type concurrencyOptions struct {
	policy     string // quoted sf-string; "" for no RateLimit headers
	retryAfter string // seconds
	shed       http.Handler
	outcome    func(*http.Request, int) adaptive.Outcome
}

type concurrencyHandler struct {
	l    *adaptive.Limiter
	next http.Handler
	o    concurrencyOptions
}

func (h *concurrencyHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	limit := h.l.Limit()
	tok, ok, err := h.l.TryAcquire(r.Context())
	switch {
	case err != nil:
		serviceUnavailable(w, r) // the request's context is done
		return
	case !ok:
		w.Header().Set("Retry-After", h.o.retryAfter)
		h.setHeaders(w, limit, 0)
		h.o.shed.ServeHTTP(w, r)
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
