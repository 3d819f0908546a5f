// Package bench holds benchmarks that run the limiter side by side with its peers.
package bench
