// Package benchtest holds what the repository's concurrent benchmarks share (the bench
// module's peer comparison and the distributed store's own): calls from many goroutines
// over a key space, reported as decisions per second.
package benchtest
