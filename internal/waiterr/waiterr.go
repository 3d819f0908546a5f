// Package waiterr holds the sentinels of a wait that cannot be served, defined once for
// every blocking call of the module (limiter's Wait, WaitN and TryAcquire, smooth's
// Acquire): package limiter re-exports them, so one errors.Is matches them all.
package waiterr

import (
	"errors"

	"github.com/ratekit/limiter/internal/deadline"
)

var (
	// ErrExceedsLimit reports a request for more permits than the algorithm can ever
	// grant at once, or whose wait would reach algo.MaxMicros (about 31.7 years).
	ErrExceedsLimit = errors.New("limiter: request exceeds the limit")

	// ErrWouldExceedDeadline reports a wait that would end after the context's deadline.
	// It also matches context.DeadlineExceeded with errors.Is (and has Timeout() true).
	ErrWouldExceedDeadline = deadline.New("limiter: wait would exceed the context deadline")
)
