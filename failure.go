package limiter

import (
	"fmt"
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

// fallbackErr is the error of a call answered by a Fallback limiter: it wraps the store's
// failure, and the fallback's error if it failed too.
func fallbackErr(err, ferr error) error {
	if ferr != nil {
		return fmt.Errorf("%w; fallback: %w", err, ferr)
	}
	return fmt.Errorf("limiter: decided by fallback: %w", err)
}
