package deadline

import "context"

// New returns a sentinel error with text msg that errors.Is matches with
// context.DeadlineExceeded and whose Timeout method reports true.
func New(msg string) error { return &exceeded{msg: msg} }

type exceeded struct{ msg string }

func (e *exceeded) Error() string { return e.msg }

// Is makes errors.Is(err, context.DeadlineExceeded) hold.
func (e *exceeded) Is(target error) bool { return target == context.DeadlineExceeded }

// Timeout reports true, as context.DeadlineExceeded does (net.Error's method).
func (e *exceeded) Timeout() bool { return true }
