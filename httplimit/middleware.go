package httplimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
)

// Middleware returns net/http middleware that limits requests with l, one limit per key
// that key computes. A request that is allowed goes to the next handler with the
// RateLimit-Policy and RateLimit headers set; one that is denied gets 429 Too Many
// Requests with Retry-After and the same headers (docs/httplimit.md has their exact values;
// the Options give the variations).
//
// When l's store is unavailable the middleware follows l's failure policy: a request that
// the policy allows (FailOpen, or a Fallback limiter that allows it) is served, without
// RateLimit headers since their figures would not describe the advertised policy; a
// request that a Fallback limiter denies gets 429 with Retry-After only; under FailClosed,
// and when the store is closed, the error handler answers (503 Service Unavailable by
// default).
//
// A nil l, key or next handler is a configuration error reported to the error handler on
// every request (500 by default), rather than a panic. The returned handler is safe for
// concurrent use.
func Middleware(l *limiter.Limiter, key KeyFunc, opts ...Option) func(http.Handler) http.Handler {
	o := defaultOptions()
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	var cfgErr error
	switch {
	case l == nil:
		cfgErr = fmt.Errorf("%w: httplimit.Middleware: limiter is nil", limiter.ErrInvalidConfig)
	case key == nil:
		cfgErr = fmt.Errorf("%w: httplimit.Middleware: KeyFunc is nil", limiter.ErrInvalidConfig)
	}
	return func(next http.Handler) http.Handler {
		err := cfgErr
		if err == nil && next == nil {
			err = fmt.Errorf("%w: httplimit.Middleware: next handler is nil", limiter.ErrInvalidConfig)
		}
		return &handler{l: l, key: key, next: next, o: o, cfgErr: err}
	}
}

// handler is the http.Handler Middleware wraps around next.
type handler struct {
	l      *limiter.Limiter
	key    KeyFunc
	next   http.Handler
	o      options
	cfgErr error
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.cfgErr != nil {
		h.o.onError(w, r, h.cfgErr)
		return
	}
	k, err := h.key(r)
	if err == nil && k == "" {
		err = fmt.Errorf("%w: KeyFunc returned an empty key", ErrMissingKey)
	}
	if err != nil {
		h.o.onError(w, r, err)
		return
	}
	n := int64(1)
	if h.o.cost != nil {
		n = h.o.cost(r)
	}
	switch {
	case n == 0:
		h.next.ServeHTTP(w, r)
		return
	case n < 0:
		h.o.onError(w, r, fmt.Errorf("%w: httplimit: WithCost returned %d", limiter.ErrInvalidRequest, n))
		return
	}
	if h.o.wait > 0 {
		h.serveWait(w, r, k, n)
		return
	}
	// The algorithm is read before the decision, so a concurrent SetAlgorithm can at worst
	// pair the new figures with the old window for one response.
	a := h.l.Algorithm()
	d, err := h.l.AllowN(r.Context(), k, n)
	switch {
	case err == nil && d.Allowed:
		h.setHeaders(w, a, d, resetSeconds(d, 0))
		h.next.ServeHTTP(w, r)
	case err == nil:
		h.deny(w, r, a, d, true)
	default:
		h.failed(w, r, a, d, err)
	}
}

// serveWait is ServeHTTP in wait mode: reserve up to the bound, sleep, serve.
func (h *handler) serveWait(w http.ResponseWriter, r *http.Request, k string, n int64) {
	ctx := r.Context()
	maxWait := h.o.wait
	if deadline, ok := ctx.Deadline(); ok {
		// A context deadline is real time, whatever clock the limiter sleeps on.
		maxWait = min(maxWait, max(0, time.Until(deadline)))
	}
	a := h.l.Algorithm()
	res, err := h.l.Reserve(ctx, k, n, maxWait)
	if res == nil {
		h.o.onError(w, r, err)
		return
	}
	d := res.Decision()
	switch {
	case err != nil && !res.OK():
		h.failed(w, r, a, d, err)
		return
	case !res.OK():
		h.deny(w, r, a, d, true)
		return
	}
	if res.Delay() > 0 {
		if werr := res.Wait(ctx); werr != nil {
			// The client is gone (or a deadline passed): give the permits back to those
			// behind us. The refund must reach the store although ctx is done; a failed
			// refund is the limiter's to report (limiter.WithErrorHandler).
			_ = res.Cancel(context.WithoutCancel(ctx))
			h.o.onError(w, r, werr)
			return
		}
	}
	if err == nil {
		h.setHeaders(w, a, d, resetSeconds(d, d.Wait))
	}
	// else: granted by FailOpen or a Fallback limiter, served without RateLimit headers.
	h.next.ServeHTTP(w, r)
}

// failed answers a call that returned an error together with decision d.
func (h *handler) failed(w http.ResponseWriter, r *http.Request, a algo.Algorithm, d algo.Decision, err error) {
	switch {
	case d.Allowed:
		// FailOpen or Fallback allowed it: the failure policy decided to serve.
		h.next.ServeHTTP(w, r)
	case errors.Is(err, store.ErrUnavailable) && d.RetryAfter > 0:
		// A Fallback limiter denied it: a real rate-limit denial, by another policy.
		h.deny(w, r, a, d, false)
	default:
		// FailClosed (its Decision is empty), a cancelled request, a bad key.
		h.o.onError(w, r, err)
	}
}

// deny answers a denied request: Retry-After, the RateLimit headers when ours is the
// policy that denied (withPolicy), then the denied handler.
func (h *handler) deny(w http.ResponseWriter, r *http.Request, a algo.Algorithm, d algo.Decision, withPolicy bool) {
	// The cost is more than the limit can ever grant: no moment would grant it, so
	// neither Retry-After nor t (a "t=0" would invite the client straight back). The
	// policy's q still tells the client the most one request may cost.
	t := int64(-1)
	if d.RetryAfter != algo.Never {
		s := retryAfterSeconds(d.RetryAfter)
		w.Header().Set(headerRetryAfter, strconv.FormatInt(s, 10))
		// The draft (Section 6) asks that Retry-After not end before the effective
		// window: on a denial, both name the moment the request would be granted.
		t = s
	}
	if withPolicy {
		h.setHeaders(w, a, d, t)
	}
	h.o.denied.ServeHTTP(w, r)
}

func (h *handler) setHeaders(w http.ResponseWriter, a algo.Algorithm, d algo.Decision, t int64) {
	if !h.o.noHeader {
		addRateLimitHeaders(w.Header(), h.o.policy, a, d, t)
	}
}
