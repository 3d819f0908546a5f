package server

import (
	"log/slog"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/store"
)

// Policy is what ratekitd answers when its store cannot decide (Redis down, a timeout,
// the circuit breaker open).
type Policy string

// The failure policies. PolicyClosed, the library's default, answers OVER_LIMIT;
// PolicyOpen answers OK; PolicyLocal decides on a local in-memory store of this process
// (each instance then enforces the whole limit on its own); PolicyError fails the call
// with gRPC UNAVAILABLE, leaving the choice to Envoy's failure_mode_deny.
const (
	PolicyClosed Policy = "closed"
	PolicyOpen   Policy = "open"
	PolicyLocal  Policy = "local"
	PolicyError  Policy = "error"
)

// Options configure a Service. The zero value of each field is its default.
type Options struct {
	// FailurePolicy answers store outages; the default is PolicyClosed.
	FailurePolicy Policy
	// FallbackStore is the local store PolicyLocal decides on; required with it.
	FallbackStore store.Store
	// Breaker is the circuit breaker of every limiter (limiter.WithCircuitBreaker): the
	// zero value is the library's default, a zero field keeps its default, Off removes it.
	Breaker limiter.CircuitBreaker
	// Timeout bounds each store call; 0 leaves the store's own timeout.
	Timeout time.Duration
	// Clock is the time of the rules that deny everything (requests_per_unit: 0) and of
	// the limiters' breakers; the default is the real clock. Tests pass the clockx.Fake of
	// their local store.
	Clock clockx.Clock
	// Shadow answers OK to every request while deciding and counting as usual (the global
	// shadow mode of envoyproxy/ratelimit).
	Shadow bool
	// Headers adds the IETF RateLimit-Policy and RateLimit headers (and Retry-After on
	// OVER_LIMIT) to response_headers_to_add.
	Headers bool
	// Concurrent makes the store calls of a request's descriptors at once rather than one
	// after the other: worth it when each call is a network round trip.
	Concurrent bool
	// Logger receives the service's logs; the default is slog.Default().
	Logger *slog.Logger
}
