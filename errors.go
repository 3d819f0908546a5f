package limiter

import (
	"errors"
	"fmt"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/waiterr"
	"github.com/ratekit/limiter/store"
)

// Errors returned by the Limiter. Test for them with errors.Is: every error is wrapped with
// the detail (field, key, n, limit) that caused it.
var (
	// ErrInvalidConfig reports a configuration that cannot be used: a nil store, a nil or
	// invalid algorithm, an invalid option. It is the same value as algo.ErrInvalidConfig,
	// so errors.Is matches errors from any package of the module.
	ErrInvalidConfig = algo.ErrInvalidConfig

	// ErrInvalidRequest reports a request that cannot be answered, such as n ≤ 0. It is the
	// same value as algo.ErrInvalidRequest.
	ErrInvalidRequest = algo.ErrInvalidRequest

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

	// ErrUnavailable reports that the store could not make the decision (Redis down, a
	// timeout, a reply that does not parse): the failure policy answered instead. It is the
	// same value as store.ErrUnavailable, so errors.Is matches errors from any package.
	// When the failure was one key's, not the store's, the error also wraps
	// store.ErrKeyUnavailable.
	ErrUnavailable = store.ErrUnavailable

	// ErrClosed reports a call on a closed store. It is the same value as store.ErrClosed.
	ErrClosed = store.ErrClosed

	// ErrInvalidKey reports an empty key (or semaphore name). It is the same value as
	// store.ErrInvalidKey.
	ErrInvalidKey = store.ErrInvalidKey

	// ErrUnsupported reports an operation the store does not provide: Peek and Reset on a
	// store without store.Admin. It is the same value as store.ErrUnsupported, and also
	// matches errors.ErrUnsupported.
	ErrUnsupported = store.ErrUnsupported
)

// errUnmade is the error of every call on a Limiter not made by New or All.
var errUnmade = fmt.Errorf("%w: the Limiter was not made by New or All (it is a zero value or nil)", ErrInvalidConfig)

// invalidN is the error for n ≤ 0.
func invalidN(n int64) error {
	return fmt.Errorf("%w: n must be > 0, got %d", ErrInvalidRequest, n)
}

// exceeds is the error of a WaitN or TryAcquire that can never be granted.
func exceeds(key string, n, limit int64) error {
	return fmt.Errorf("%w: key %q: n=%d, limit=%d", ErrExceedsLimit, key, n, limit)
}
