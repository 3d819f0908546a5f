package limiter

import (
	"errors"
	"fmt"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/waiterr"
)

// The errors of the Limiter's own, below, live here; the others it returns live, once,
// in the package that defines them, because the stores and algorithms cannot import this
// one: algo.ErrInvalidConfig and algo.ErrInvalidRequest (bad configuration, bad request,
// from every constructor and option of the module), and store.ErrUnavailable,
// store.ErrKeyUnavailable, store.ErrClosed, store.ErrInvalidKey and store.ErrUnsupported
// (the store). Test for each with errors.Is: every error is wrapped with the detail
// (field, key, n, limit) that caused it.
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
