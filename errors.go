package limiter

import (
	"context"
	"errors"
	"fmt"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/waiterr"
	"github.com/ratekit/limiter/store"
)

// The Limiter's own errors. It also returns algo.ErrInvalidConfig, algo.ErrInvalidRequest
// and the store's (store.ErrUnavailable, ErrKeyUnavailable, ErrClosed, ErrInvalidKey,
// ErrUnsupported), each wrapped with its detail: test with errors.Is.
var (
	// ErrExceedsLimit reports a request for more permits than the algorithm can ever grant at
	// once (for example n > Burst), or whose wait would reach algo.MaxMicros (about 31
	// years). Wait, WaitN and TryAcquire return it at once instead of blocking forever;
	// Allow and Reserve report it as a denial whose RetryAfter is algo.Never.
	ErrExceedsLimit = waiterr.ErrExceedsLimit

	// ErrWouldExceedDeadline reports that WaitN (or smooth's Acquire) would have to wait
	// past the context's deadline. It is returned at once, without reserving anything, as golang.org/x/time/rate
	// does. It also matches context.DeadlineExceeded with errors.Is (and has Timeout() true),
	// so code that checks for a deadline sees it as one.
	ErrWouldExceedDeadline = waiterr.ErrWouldExceedDeadline

	// ErrCircuitOpen reports a call that was not sent to the store because the circuit
	// breaker (see WithCircuitBreaker) is open. The call was answered by the failure policy;
	// the error also wraps store.ErrUnavailable.
	ErrCircuitOpen = errors.New("limiter: circuit open")
)

// errUnmade is the error of every call on a Limiter not made by New or All.
var errUnmade = fmt.Errorf("%w: the Limiter was not made by New or All (it is a zero value or nil)", algo.ErrInvalidConfig)

// invalidN is the error for n ≤ 0.
func invalidN(n int64) error {
	return fmt.Errorf("%w: n must be > 0, got %d", algo.ErrInvalidRequest, n)
}

// exceeds is the error of a WaitN or TryAcquire that can never be granted.
func exceeds(key string, n, limit int64) error {
	return fmt.Errorf("%w: key %q: n=%d, limit=%d", ErrExceedsLimit, key, n, limit)
}

// unavailable is the error of a store call that found the store unavailable (err wraps
// store.ErrUnavailable): the failure policy answers it (onFailure), so it never reaches a
// caller. outage is false when the store marked it as one key's failure
// (store.ErrKeyUnavailable): the store answered, so the breaker does not count it.
type unavailable struct {
	err    error
	outage bool
}

func (u *unavailable) Error() string { return u.err.Error() }

func (u *unavailable) Unwrap() error { return u.err }

// errCircuitOpen is the error of every call skipped by an open breaker, and circuitOpen
// the same as an unavailable store call; both are built once, so a skipped call allocates
// nothing.
var (
	errCircuitOpen = &both{"limiter: circuit open, store unavailable", [2]error{ErrCircuitOpen, store.ErrUnavailable}}
	circuitOpen    = &unavailable{errCircuitOpen, true}
)

// both is an error that matches two sentinels under a message of its own, which does not
// repeat their "limiter: " prefixes.
type both struct {
	msg  string
	errs [2]error
}

func (e *both) Error() string   { return e.msg }
func (e *both) Unwrap() []error { return e.errs[:] }

// classify tells a store failure, which the failure policy answers and which it returns as
// an *unavailable, from every other error, returned as it is. ctx is the caller's context:
// once it is done, the error is the caller's, not the store's. It is the one place where
// the Limiter reads what a store's error means: the store says which of its failures
// concern one key (store.ErrKeyUnavailable) rather than the store; every other failure,
// and a deadline, is an outage.
func classify(ctx context.Context, err error) error {
	switch {
	case ctx.Err() != nil:
		return err
	case errors.Is(err, store.ErrUnavailable):
		return &unavailable{err, !errors.Is(err, store.ErrKeyUnavailable)}
	case errors.Is(err, context.DeadlineExceeded):
		// Not the caller's deadline, so the per-call timeout or the store's own.
		return &unavailable{fmt.Errorf("%w: no answer in time: %w", store.ErrUnavailable, err), true}
	default:
		return err
	}
}

// unsupported is the error of an admin call on a store without store.Admin.
func unsupported(op string, s store.Store) error {
	return fmt.Errorf("%w: limiter: %s needs a store implementing store.Admin; %T does not", store.ErrUnsupported, op, s)
}
