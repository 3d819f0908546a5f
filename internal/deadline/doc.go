// Package deadline builds the "would exceed the deadline" errors of the limiter packages:
// sentinels that also match context.DeadlineExceeded with errors.Is, as golang/go#54541
// asked of x/time/rate, so code that checks for a deadline sees them as one.
package deadline
