package limiter

import (
	"context"
	"fmt"
)

// FailurePolicy decides what a call answers when the store cannot: when it returns an
// error wrapping store.ErrUnavailable, when a WithTimeout deadline passes, or when the
// circuit breaker is open. The failure of one key (store.ErrKeyUnavailable: a Redis key
// holding another type of data, a script error) goes through the policy too, since the
// store could not decide for that key, though the breaker does not count it. Errors in the
// request or the configuration (ErrInvalidRequest, ErrInvalidConfig, store.ErrInvalidKey)
// and a caller's own cancelled context never go through the policy.
//
// The zero value is FailClosed. The policies are FailClosed, FailOpen and Fallback.
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
	// FailClosed denies when the store is unavailable: Allow and AllowN return a Decision
	// with Allowed false (and no other field set) together with the error; Reserve returns a
	// Reservation that is not OK; Wait and WaitN return the error; TryAcquire returns
	// (false, err). Nothing gets through while the store is down. It is the default.
	FailClosed = FailurePolicy{kind: failClosed}

	// FailOpen allows when the store is unavailable.
	//
	// Allow, AllowN and Reserve return an allowed Decision (Allowed true, no other field
	// set; an OK Reservation with no delay that Cancel leaves alone) together with a non-nil
	// error: under FailOpen a caller must look at the Decision, not at the error, to decide.
	// Wait and WaitN return nil and TryAcquire returns (true, nil) at once, so their only
	// trace of the failure is the WithErrorHandler function. Everything gets through while
	// the store is down.
	FailOpen = FailurePolicy{kind: failOpen}
)

// Fallback decides with l when the store is unavailable; l is normally a Limiter over a
// local.Store with a reduced rate (for example the global rate divided by the number of
// instances), so each process keeps a bound of its own while the shared store is down.
//
// Every call decides with l (its rules, failure policy and observer) as if it had been made
// on l: Allow, AllowN and Reserve return l's answer (a Reservation of l's permits) with an
// error wrapping the store failure (and l's error too if l failed as well); Wait, WaitN and
// TryAcquire sleep, on l's clock, for what l grants, and return nil or true on success. A
// denied WaitN that sleeps and tries again asks the store first again.
// A Fallback whose l is nil makes New fail with ErrInvalidConfig.
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

// onFailure answers, by l's failure policy, request q for key (after l's key function)
// whose store call failed with err, a store failure already reported to the error handler.
// It is the one place where the policies differ:
//
//   - FailClosed fails the request with err and marks o.refused (Reserve answers with a
//     Reservation that is not OK);
//   - FailOpen grants it with an empty Decision that holds nothing, and leaves err in o.soft;
//   - Fallback decides with the fallback limiter (takeOver).
func (l *Limiter) onFailure(ctx context.Context, key string, q request, o *outcome, err error) (Decision, error) {
	switch l.policy.kind {
	case failOpen:
		o.soft = err
		return Decision{Allowed: true}, nil
	case failFallback:
		return l.policy.fallback.takeOver(ctx, key, q, o, err)
	default:
		o.refused = true
		return Decision{}, err
	}
}

// takeOver answers q for key by the Fallback limiter fb, through fb's own decider (its
// rules, failure policy and observer), as if q had been asked of fb: o then describes fb's
// answer, o.by is fb, and the caller (WaitN, TryAcquire, Reserve) sleeps on what fb holds.
// err is the store failure: the error wraps it, and fb's error when fb failed as well;
// otherwise it goes to o.soft.
func (fb *Limiter) takeOver(ctx context.Context, key string, q request, o *outcome, err error) (Decision, error) {
	var fo outcome
	d, ferr := fb.decide(ctx, key, q, &fo)
	*o = fo
	if o.by == nil {
		o.by = fb
	}
	if ferr != nil {
		return d, fallbackErr(err, ferr)
	}
	o.soft = fallbackErr(err, fo.soft)
	return d, nil
}

// fallbackErr is the error of a call answered by a Fallback limiter: it wraps the store's
// failure, and the fallback's error if it failed too.
func fallbackErr(err, ferr error) error {
	if ferr != nil {
		return fmt.Errorf("%w; fallback: %w", err, ferr)
	}
	return fmt.Errorf("limiter: decided by fallback: %w", err)
}
