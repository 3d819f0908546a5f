// Package deadline builds the "would exceed the deadline" error of the limiter packages:
// a sentinel that also matches context.DeadlineExceeded with errors.Is, as golang/go#54541
// asked of x/time/rate, so code that checks for a deadline sees it as one.
package deadline
