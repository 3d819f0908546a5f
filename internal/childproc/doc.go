// Package childproc runs the current test binary again as a helper process, for tests
// that need several real processes (semaphores and smooth limiters shared through Redis).
package childproc
