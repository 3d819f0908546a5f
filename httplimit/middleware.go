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
	"github.com/ratekit/limiter/internal/rlheader"
	"github.com/ratekit/limiter/store"
)

// Middleware returns net/http middleware that limits requests with l, one limit per key
// that key computes. A request that is allowed goes to the next handler with the
// RateLimit-Policy and RateLimit headers set; one that is denied gets 429 Too Many
// Requests with Retry-After and the same headers (docs/httplimit.md has their exact values;
// the Options give the variations). A composite l (limiter.All) gets one item of each
// header per rule, named after the rule: the name given to algo.Named, else one derived
// from the rule ("fw-100-60s": its slot's kind, quota and window), else its position
// ("r2"); names are unique and fixed when Middleware runs.
//
// When l's store is unavailable the middleware follows l's failure policy: a request that
// the policy allows (FailOpen, or a Fallback limiter that allows it) is served, without
// RateLimit headers since their figures would not describe the advertised policy; a
// request that a Fallback limiter denies gets 429 with Retry-After only; under FailClosed,
// and when the store is closed, the error handler answers (503 Service Unavailable by
// default).
//
// Nil options are skipped. A nil l or key, or an option with a value it cannot use (see
// each option), makes Middleware return an error wrapping algo.ErrInvalidConfig that
// names it, and no middleware. A nil next handler, which only shows when the middleware
// wraps it, does not panic: every request goes to the error handler with an error
// wrapping algo.ErrInvalidConfig (500 by default). The returned handler is safe for
// concurrent use.
func Middleware(l *limiter.Limiter, key KeyFunc, opts ...Option) (func(http.Handler) http.Handler, error) {
	switch {
	case l == nil:
		return nil, fmt.Errorf("%w: httplimit.Middleware: the limiter is nil", algo.ErrInvalidConfig)
	case key == nil:
		return nil, fmt.Errorf("%w: httplimit.Middleware: the KeyFunc is nil", algo.ErrInvalidConfig)
	}
	o := defaultOptions("Middleware")
	for _, opt := range opts {
		if opt != nil {
			opt.apply(&o)
		}
	}
	if o.err == nil && o.concurrencyOpt != "" {
		o.invalid("%s applies to Concurrency, not to Middleware", o.concurrencyOpt)
	}
	if o.err == nil && o.charge != nil {
		o.chargeable(l)
	}
	if o.err != nil {
		return nil, o.err
	}
	policies := rlheader.New(l, o.policy, o.policySet)
	return func(next http.Handler) http.Handler {
		var err error
		if next == nil {
			err = fmt.Errorf("%w: httplimit.Middleware: the next handler is nil", algo.ErrInvalidConfig)
		}
		return &handler{l: l, key: key, next: next, o: o, cfgErr: err, policies: policies}
	}, nil
}

// handler is the http.Handler Middleware wraps around next.
type handler struct {
	l      *limiter.Limiter
	key    KeyFunc
	next   http.Handler
	o      options
	cfgErr error
	// policies describes l in the RateLimit headers: one policy, or one per rule of a
	// composite (limiter.All).
	policies *rlheader.Policies
}

// traced reports whether a composite's requests need each rule's figures: for the
// headers or the problem details' violated-policies. Otherwise nothing is traced.
func (h *handler) traced() bool { return h.policies.Composite() && (!h.o.noHeader || h.o.problem) }

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
		h.o.onError(w, r, fmt.Errorf("%w: httplimit: WithCost returned %d", algo.ErrInvalidRequest, n))
		return
	}
	if h.o.wait > 0 {
		h.serveWait(w, r, k, n)
		return
	}
	// The algorithm is read before the decision, so a concurrent SetAlgorithm can at worst
	// pair the new figures with the old window for one response.
	a := h.l.Algorithm()
	ctx, f := r.Context(), (*rlheader.Figures)(nil)
	if h.traced() {
		ctx, f = h.policies.Trace(ctx, n)
	}
	d, err := h.l.AllowN(ctx, k, n)
	switch {
	case err == nil && d.Allowed:
		h.setHeaders(w, k, a, d, f, 0)
		h.serve(w, r, k)
	case err == nil:
		h.deny(w, r, k, a, d, f, true)
	default:
		h.failed(w, r, k, a, d, err)
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
	rctx, f := ctx, (*rlheader.Figures)(nil)
	if h.traced() {
		rctx, f = h.policies.Trace(ctx, n)
	}
	res, err := h.l.Reserve(rctx, k, n, maxWait)
	if res == nil {
		h.o.onError(w, r, err)
		return
	}
	d := res.Decision()
	switch {
	case err != nil && !res.OK():
		h.failed(w, r, k, a, d, err)
		return
	case !res.OK():
		h.deny(w, r, k, a, d, f, true)
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
		h.setHeaders(w, k, a, d, f, d.Wait)
	}
	// else: granted by FailOpen or a Fallback limiter, served without RateLimit headers.
	h.serve(w, r, k)
}

// failed answers a call that returned an error together with decision d.
func (h *handler) failed(w http.ResponseWriter, r *http.Request, k string, a algo.Algorithm, d algo.Decision, err error) {
	switch {
	case d.Allowed:
		// FailOpen or Fallback allowed it: the failure policy decided to serve.
		h.serve(w, r, k)
	case errors.Is(err, store.ErrUnavailable) && d.RetryAfter > 0:
		// A Fallback limiter denied it: a real rate-limit denial, by another policy.
		h.deny(w, r, k, a, d, nil, false)
	default:
		// FailClosed (its Decision is empty), a cancelled request, a bad key.
		h.o.onError(w, r, err)
	}
}

// deny answers a denied request: Retry-After, the RateLimit headers when ours is the
// policy that denied (withPolicy), then the denied handler or the problem details.
func (h *handler) deny(w http.ResponseWriter, r *http.Request, k string, a algo.Algorithm, d algo.Decision, f *rlheader.Figures, withPolicy bool) {
	// The cost is more than the limit can ever grant: no moment would grant it, so
	// neither Retry-After nor t (a "t=0" would invite the client straight back). The
	// policy's q still tells the client the most one request may cost.
	if d.RetryAfter != algo.Never {
		w.Header().Set("Retry-After", strconv.FormatInt(rlheader.RetryAfterSeconds(d.RetryAfter), 10))
	}
	if withPolicy {
		// The draft (Section 6) asks that Retry-After not end before the effective
		// window: on a denial, t names the moment the request would be granted.
		h.setHeaders(w, k, a, d, f, 0)
	}
	if !h.o.problem {
		h.o.denied.ServeHTTP(w, r)
		return
	}
	var violated []string
	if withPolicy {
		violated = h.policies.Violated(f)
	}
	writeProblem(w, violated)
}

func (h *handler) setHeaders(w http.ResponseWriter, k string, a algo.Algorithm, d algo.Decision, f *rlheader.Figures, waited time.Duration) {
	if !h.o.noHeader {
		rlheader.Add(w.Header().Add, h.policies.Items(a, d, f, waited), h.o.unit, rlheader.PartitionKey(h.o.pkSecret, k))
	}
}
