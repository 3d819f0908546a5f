// Package storeclock picks the clock to sleep on against a store: the packages that
// block on top of a store (limiter, smooth, semaphore) share it so that they agree.
package storeclock
