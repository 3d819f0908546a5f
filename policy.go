package limiter

import (
	"context"
	"fmt"

	"github.com/ratekit/limiter/algo"
)

// FailurePolicy decides what a call answers when the store cannot: an error wrapping
// store.ErrUnavailable (one key's failure, store.ErrKeyUnavailable, included), a WithTimeout
// deadline, or an open circuit breaker. Bad input and a caller's done context never reach
// it. The zero value is FailClosed.
type FailurePolicy struct {
	kind     failureKind
	fallback *Limiter
}

type failureKind uint8

const (
	failClosed failureKind = iota
	failOpen
	failFallback
)

var (
	// FailClosed, the default, denies: Allow returns a denied, empty Decision with the
	// error, Reserve a Reservation that is not OK, Wait and TryAcquire the error.
	FailClosed = FailurePolicy{kind: failClosed}

	// FailOpen allows: Allow and Reserve return an allowed, empty Decision (an OK
	// Reservation holding nothing) with a non-nil error, so look at the Decision; Wait and
	// TryAcquire succeed at once, the failure going to the error handler only.
	FailOpen = FailurePolicy{kind: failOpen}
)

// Fallback decides with l, typically a Limiter over a local.Store at a reduced rate, so each
// process keeps a bound of its own while the shared store is down. Every call decides with
// l as if made on l (its rules, policy and observer): Allow and Reserve return l's answer
// with an error wrapping the store failure (and l's error if l failed too); Wait and
// TryAcquire sleep for what l grants. A nil l is an invalid config.
func Fallback(l *Limiter) FailurePolicy {
	return FailurePolicy{kind: failFallback, fallback: l}
}

// String returns "fail-closed", "fail-open" or "fallback".
func (p FailurePolicy) String() string {
	switch p.kind {
	case failOpen:
		return "fail-open"
	case failFallback:
		return "fallback"
	default:
		return "fail-closed"
	}
}

// WithFailurePolicy sets what a call answers when the store is unavailable; the default is
// FailClosed.
func WithFailurePolicy(p FailurePolicy) Option {
	return optionFunc(func(o *options) { o.policy = p })
}

// WithShadow puts the Limiter in shadow mode, to try a limit on real traffic: each request
// is decided, takes what it is granted and is reported as usual (Event.Shadow, real
// figures), but the caller is let through: Allow returns an allowed Decision; Reserve,
// WaitN and TryAcquire ask for what is available now and grant at once; a store failure
// is answered as by FailOpen (the Observer sees the policy's real answer). Errors that are
// not decisions (n ≤ 0, an empty key, a done context) are returned as usual. In a
// composite it is per rule: a shadow rule counts as granting (docs/observability.md).
func WithShadow() Option {
	return optionFunc(func(o *options) { o.shadow = true })
}

// onFailure answers, by the rule's failure policy, request q for key (after the rule's key
// function) whose store call failed with err, already reported to the error handler. It
// returns the answer's Decision, whether it has figures, and whether the rule counts as
// granting, or an error that fails the request. It is the one place the policies differ:
//
//   - FailClosed fails the request with err (res.refused: Reserve answers with a
//     Reservation that is not OK);
//   - FailOpen grants it, holding nothing, with err kept in res.soft;
//   - Fallback decides with the fallback limiter as if q had been asked of it (its rules,
//     policy and observer): what it grants is held in res, and the error, or res.soft,
//     wraps err.
func (r *rule) onFailure(ctx context.Context, key string, q algo.Request, err error, res *result) (d Decision, figures, ok bool, ferr error) {
	switch r.policy.kind {
	case failOpen:
		res.addSoft(err)
		return Decision{Allowed: true}, false, true, nil
	case failFallback:
		fb := r.policy.fallback
		fres := result{keep: res.keep}
		ferr := fb.run(ctx, key, q, &fres)
		d := fres.d
		res.held = append(res.held, fres.held...)
		res.by = fres.answerer(fb)
		if ferr != nil {
			res.refused = true
			return d, false, false, fallbackErr(err, ferr)
		}
		res.addSoft(fallbackErr(err, fres.soft))
		return d, d.Limit > 0 || !d.Allowed, d.Allowed, nil
	default:
		res.refused = true
		return Decision{}, false, false, err
	}
}

// fallbackErr is the error of a call answered by a Fallback limiter: it wraps the store's
// failure, and the fallback's error if it failed too.
func fallbackErr(err, ferr error) error {
	if ferr != nil {
		return fmt.Errorf("%w; fallback: %w", err, ferr)
	}
	return fmt.Errorf("limiter: decided by fallback: %w", err)
}
