package httplimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/ratekit/limiter/adaptive"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/rlheader"
	"github.com/ratekit/limiter/store"
)

// defaultPolicyName is the policy name the RateLimit-Policy and RateLimit headers of
// Middleware carry unless WithPolicyName sets another.
const defaultPolicyName = rlheader.DefaultName

// Option configures Middleware or Concurrency; each option's doc says which it applies
// to, and an option given to the other one is an error. A nil Option is ignored; an Option
// given a value it cannot use makes Middleware (or Concurrency) return an error wrapping
// algo.ErrInvalidConfig.
type Option interface {
	apply(*options)
}

type options struct {
	cost      func(*http.Request) int64
	charge    func(*http.Request, int, http.Header) int64 // WithChargeAfter
	wait      time.Duration
	denied    http.Handler
	deniedSet bool // WithDeniedHandler gave one
	onError   func(http.ResponseWriter, *http.Request, error)
	policy    string // printable ASCII (rlheader.CleanName)
	policySet bool   // WithPolicyName gave a name
	unit      string // qu: a quoted sf-string; "" for requests
	pkSecret  []byte // WithPartitionKey; nil: no pk
	problem   bool   // WithProblemDetails
	noHeader  bool
	err       error  // the first invalid option
	ctor      string // "Middleware" or "Concurrency", for the error

	// Concurrency's own.
	retryAfter string // seconds
	outcome    func(*http.Request, int) adaptive.Outcome

	// The first option given that applies only to Middleware, or only to Concurrency.
	middlewareOpt, concurrencyOpt string
}

func defaultOptions(ctor string) options {
	return options{
		ctor:       ctor,
		denied:     http.HandlerFunc(tooManyRequests),
		onError:    DefaultErrorHandler,
		policy:     defaultPolicyName,
		retryAfter: retryAfterValue(defaultConcurrencyRetryAfter),
		outcome:    DefaultConcurrencyOutcome,
	}
}

type optionFunc func(*options)

func (f optionFunc) apply(o *options) { f(o) }

// invalid records the first invalid option, naming it and its value.
func (o *options) invalid(format string, args ...any) {
	if o.err == nil {
		o.err = fmt.Errorf("%w: httplimit.%s: "+format, append([]any{algo.ErrInvalidConfig, o.ctor}, args...)...)
	}
}

// middlewareOnly and concurrencyOnly record an option that applies to one of the two.
func (o *options) middlewareOnly(name string) {
	if o.middlewareOpt == "" {
		o.middlewareOpt = name
	}
}

func (o *options) concurrencyOnly(name string) {
	if o.concurrencyOpt == "" {
		o.concurrencyOpt = name
	}
}

// WithCost sets how many permits a request takes, for example more for an expensive
// endpoint or by the size of an upload. The default is 1 per request; a nil f is an error
// (leave the option out for the default).
//
// A cost of 0 exempts the request: it is served without consulting the limiter and
// without RateLimit headers (health checks, say). A negative cost is a bug in f: the
// request goes to the error handler with an error wrapping algo.ErrInvalidRequest
// (500 by default). A cost larger than the limit can ever grant is denied with 429 and
// no Retry-After, since waiting would not help.
func WithCost(f func(*http.Request) int64) Option {
	return optionFunc(func(o *options) {
		o.middlewareOnly("WithCost")
		if f == nil {
			o.invalid("WithCost(nil): the cost function is nil")
			return
		}
		o.cost = f
	})
}

// WithChargeAfter charges, once the next handler has returned, what the request turned
// out to use: f gets the request, the status and the header of the response (an LLM's
// usage header, X-Usage-Tokens say) and returns the cost, which the middleware records
// for the key the check used with limiter.Limiter.Charge, whatever is left. Usage beyond
// the limit is debt: later requests of the key are denied with 429 and Retry-After until
// it is earned back (what debt means per algorithm: docs/usage-based-limits.md). A cost
// ≤ 0 charges nothing. The default is no charge; a nil f is an error, and so is a limiter
// with an algorithm that does not state algo.Chargeable.
//
// The check before the handler stays as it is (WithCost, 1 permit by default) and keeps
// what it took: to count every unit once, return the usage beyond the check's cost
// (tokens − 1 with the default), or the whole usage to make the check a fee of its own.
// Only a request that the check let through and that reached the handler is charged: not
// an exempt one (WithCost returned 0), a denied one or one the error handler answered.
//
// status is the status the handler wrote: 200 when it wrote none, as net/http then sends;
// 0 when it hijacked the connection without writing one. With ginlimit, echolimit and
// fiberlimit it is the framework's: for a handler that returned an error, the error's
// status (echo.HTTPError, fiber.Error) or 500, as the framework's default error handler
// sends. f runs on the request's goroutine after the handler (a streamed response has
// been written by then) and must not keep h.
//
// The charge is made on the request's context without its cancellation (the work was
// done even if the client has gone), and nothing of the response changes: its RateLimit
// headers, sent before the handler ran, describe the key after the check, not after the
// charge. A charge the
// limiter cannot record (the store is down under FailClosed, or closed; a cost above
// 2^53) goes to the error handler with a ResponseWriter that drops what it writes, since
// the response is already on its way; store failures that the failure policy answers
// (FailOpen records nothing, a Fallback limiter is charged) do not.
func WithChargeAfter(f func(r *http.Request, status int, h http.Header) int64) Option {
	return optionFunc(func(o *options) {
		o.middlewareOnly("WithChargeAfter")
		if f == nil {
			o.invalid("WithChargeAfter(nil): the function is nil")
			return
		}
		o.charge = f
	})
}

// WithWait makes the middleware delay a request instead of rejecting it, when its permits
// will be available within maxWait: it reserves them (see limiter.Limiter.Reserve), sleeps on
// the limiter's clock until they are usable, and then serves the request. A request whose
// permits would come later than maxWait (or later than its context's deadline) is rejected
// at once with 429, reserving nothing. If the request's context ends while it waits (the
// client went away), the permits are given back and the handler is not called; the error
// handler gets the context's error (503 by default, which a departed client never sees).
//
// The default, and maxWait = 0, is no waiting: a request is served or rejected at once;
// maxWait < 0 is an error.
// Waiting holds a goroutine and a connection per delayed request, so keep maxWait short
// (well under the clients' timeouts).
func WithWait(maxWait time.Duration) Option {
	return optionFunc(func(o *options) {
		o.middlewareOnly("WithWait")
		if maxWait < 0 {
			o.invalid("WithWait(%v): the bound must be ≥ 0 (0: no waiting)", maxWait)
			return
		}
		o.wait = maxWait
	})
}

// WithDeniedHandler sets the handler that writes the response to a rate-limited request
// (Middleware) or a shed one (Concurrency). It is called with Retry-After and the
// RateLimit headers already set on the ResponseWriter and must write the status itself,
// normally 429 Too Many Requests for Middleware (for example with a JSON problem document)
// and 503 Service Unavailable for Concurrency. The default writes that status with its
// plain-text text ("Too Many Requests", "Service Unavailable"). A nil h is an error (leave the option out for the default). It
// replaces WithProblemDetails given before it; the last of the two wins.
func WithDeniedHandler(h http.Handler) Option {
	return optionFunc(func(o *options) {
		if h == nil {
			o.invalid("WithDeniedHandler(nil): the handler is nil")
			return
		}
		o.denied, o.deniedSet, o.problem = h, true, false
	})
}

// WithErrorHandler sets the function that answers a request the middleware cannot decide
// on: its KeyFunc failed, WithCost returned a negative cost, the store is unavailable and
// the limiter's failure policy is FailClosed, the request's context ended, or the limiter
// returned another error. The function writes the whole response. The default is
// DefaultErrorHandler; a nil f is an error (leave the option out for the default).
//
// Store failures that the failure policy answers with an allowed decision (FailOpen,
// Fallback) never reach this function: the request is served. Count them with the
// limiter's own limiter.WithErrorHandler.
func WithErrorHandler(f func(w http.ResponseWriter, r *http.Request, err error)) Option {
	return optionFunc(func(o *options) {
		o.middlewareOnly("WithErrorHandler")
		if f == nil {
			o.invalid("WithErrorHandler(nil): the function is nil")
			return
		}
		o.onError = f
	})
}

// WithPolicyName sets the policy name that identifies the limit in the RateLimit-Policy
// and RateLimit headers, for example "per-ip" or "api-key". The middleware adds its
// items to those headers rather than replacing them, so when several middlewares limit
// the same requests (per IP, then per API key) each contributes an item: give them
// distinct names. Characters outside printable ASCII are dropped; an empty name keeps the
// default: "default" for Middleware, "concurrency" for Concurrency.
//
// A composite limiter (limiter.All) sends one item per rule, named after the rule (see
// Middleware); the name given here then prefixes each: "api-fw-100-60s".
func WithPolicyName(name string) Option {
	return optionFunc(func(o *options) {
		if name = rlheader.CleanName(name); name != "" {
			o.policy, o.policySet = name, true
		}
	})
}

// WithoutHeaders stops the middleware (Middleware or Concurrency) from writing the
// RateLimit-Policy and RateLimit headers, for services that prefer not to disclose their
// limits. Retry-After is still
// sent with every 429 that has a finite retry time, since it is what well-behaved clients
// and proxies act on. The default is to write the headers.
func WithoutHeaders() Option {
	return optionFunc(func(o *options) { o.noHeader = true })
}

// tooManyRequests is the default denied handler.
func tooManyRequests(w http.ResponseWriter, _ *http.Request) {
	http.Error(w, http.StatusText(http.StatusTooManyRequests), http.StatusTooManyRequests)
}

// DefaultErrorHandler is the error handler Middleware uses unless WithErrorHandler sets
// another. It answers with a plain-text status line, never with the error's text (which
// may name keys, addresses or backends):
//
//   - 400 Bad Request when err wraps ErrMissingKey (the client sent no key, such as a
//     missing header for ByHeader);
//   - 503 Service Unavailable when err wraps store.ErrUnavailable (the store is down and
//     the failure policy is FailClosed) or store.ErrClosed (the store was closed, as
//     during a shutdown), or when the request's context ended;
//   - 500 Internal Server Error otherwise: a KeyFunc that cannot compute a key from a
//     request the client could not have got wrong (ByIP with an unparseable RemoteAddr, a
//     trusted proxy writing garbage in X-Forwarded-For), a negative cost, a nil next
//     handler.
func DefaultErrorHandler(w http.ResponseWriter, _ *http.Request, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrMissingKey):
		code = http.StatusBadRequest
	case errors.Is(err, store.ErrUnavailable),
		errors.Is(err, store.ErrClosed),
		errors.Is(err, context.Canceled),
		errors.Is(err, context.DeadlineExceeded):
		code = http.StatusServiceUnavailable
	}
	http.Error(w, http.StatusText(code), code)
}

// WithQuotaUnit sets the unit the limit counts, sent as the "qu" parameter of
// RateLimit-Policy: "content-bytes" when WithCost charges a request by its size,
// "requests" (the default, which is left out of the header as the draft allows) when
// each request costs the same, or another value of the draft's quota unit registry. The
// unit must be 1 to 64 characters of lower-case letters, digits and '-'; another value
// is an error.
func WithQuotaUnit(unit string) Option {
	return optionFunc(func(o *options) {
		o.middlewareOnly("WithQuotaUnit")
		if !validUnit(unit) {
			o.invalid("WithQuotaUnit(%q): use 1 to 64 lower-case letters, digits or '-'", unit)
			return
		}
		o.unit = `"` + unit + `"`
		if unit == "requests" {
			o.unit = ""
		}
	})
}

func validUnit(u string) bool {
	if u == "" || len(u) > 64 {
		return false
	}
	for i := 0; i < len(u); i++ {
		if c := u[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// WithPartitionKey adds the "pk" parameter (the partition key, draft Section 3.1.4) to
// every item of RateLimit-Policy and RateLimit: a client acting for several users or API
// keys can then tell which quota a response describes. The key itself is never sent
// (Section 6.1: it may be an address or a credential): pk is the first 16 bytes of
// HMAC-SHA-256(secret, key), in base64 as a Structured Field Byte Sequence
// (pk=:base64:). With a secret the value cannot be reversed by hashing every IPv4 address;
// keep the secret stable across instances and restarts so that one key keeps one pk. The
// default is no pk; a secret shorter than 16 bytes is an error.
func WithPartitionKey(secret []byte) Option {
	return optionFunc(func(o *options) {
		o.middlewareOnly("WithPartitionKey")
		if len(secret) < 16 {
			o.invalid("WithPartitionKey: the secret has %d bytes, want at least 16", len(secret))
			return
		}
		o.pkSecret = append([]byte(nil), secret...)
	})
}

// WithProblemDetails answers a rate-limited request with a problem document (RFC 9457)
// of the draft's "quota-exceeded" type (Section 5.1) instead of the plain-text body:
//
//	HTTP/1.1 429 Too Many Requests
//	Content-Type: application/problem+json
//
//	{"type":"https://iana.org/assignments/http-problem-types#quota-exceeded",
//	 "title":"Too Many Requests","status":429,"violated-policies":["default"]}
//
// violated-policies names the policies that denied the request, as in the RateLimit
// headers: every rule of a composite that denied. It is left out when another limiter (a
// Fallback) denied. The default is the plain-text body; WithDeniedHandler given after it
// replaces it.
func WithProblemDetails() Option {
	return optionFunc(func(o *options) {
		o.middlewareOnly("WithProblemDetails")
		o.problem = true
	})
}
