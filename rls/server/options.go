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

// The failure policies. PolicyError, the default, fails the call with gRPC UNAVAILABLE,
// as envoyproxy/ratelimit does, leaving the answer to Envoy's failure_mode_deny;
// PolicyClosed, the library's default, answers OVER_LIMIT; PolicyOpen answers OK;
// PolicyLocal decides on a local in-memory store of this process (each instance then
// enforces the whole limit on its own).
const (
	PolicyClosed Policy = "closed"
	PolicyOpen   Policy = "open"
	PolicyLocal  Policy = "local"
	PolicyError  Policy = "error"
)

// Default bounds on a request, against hostile input: Envoy sends a descriptor per
// rate_limits action, a few per request, each of a few entries.
const (
	DefaultMaxDescriptors = 64
	DefaultMaxEntries     = 16
)

// Options configure a Service. The zero value of each field is its default.
type Options struct {
	// FailurePolicy answers store outages; the default is PolicyError.
	FailurePolicy Policy
	// FallbackStore is the local store PolicyLocal decides on; required with it.
	FallbackStore store.Store
	// Breaker is the circuit breaker of every limiter (limiter.WithCircuitBreaker): the
	// zero value is the library's default, a zero field keeps its default, Off removes it.
	Breaker limiter.CircuitBreaker
	// Timeout bounds each store call; 0 leaves the store's own timeout.
	Timeout time.Duration
	// Clock is the time of the rules that deny everything (requests_per_unit: 0), of the
	// limiters' breakers and of the outage log lines; the default is the real clock. Tests
	// pass the clockx.Fake of their local store.
	Clock clockx.Clock
	// Shadow is envoyproxy/ratelimit's global shadow mode (SHADOW_MODE): everything is
	// decided and counted as usual and each descriptor's status keeps its code, but the
	// overall code is OK. Off by default.
	Shadow bool
	// QuotaMode is envoyproxy/ratelimit's global QUOTA_MODE: every descriptor is decided
	// in quota mode, as if its rule had quota_mode: true, so the overall code is
	// OVER_LIMIT only when every descriptor (but the unlimited ones) is. Off by default.
	QuotaMode bool
	// DenialsSpendNothing makes a denied request spend nothing, the library's reading. By
	// default a denied request's hits are counted as envoyproxy/ratelimit counts them: the
	// key's rest is spent, so it grants nothing more until its window ends.
	DenialsSpendNothing bool
	// Headers adds the IETF RateLimit-Policy and RateLimit headers (and Retry-After on
	// OVER_LIMIT) to response_headers_to_add. Off by default.
	Headers bool
	// ReferenceHeaders adds envoyproxy/ratelimit's limit, remaining and reset headers
	// (its LIMIT_RESPONSE_HEADERS_ENABLED; RateLimit-Limit, RateLimit-Remaining and
	// RateLimit-Reset unless renamed, X-RateLimit-* in many deployments) of the
	// descriptor closest to its limit. Off by default; both kinds may be on.
	ReferenceHeaders bool
	// ReferenceHeaderNames renames them; an empty name keeps envoyproxy/ratelimit's
	// default.
	ReferenceHeaderNames ReferenceHeaderNames
	// DynamicMetadata sends back dynamic_metadata as envoyproxy/ratelimit's
	// RESPONSE_DYNAMIC_METADATA does: the domain, the descriptors, and the `metadata:` of
	// the rules that passed. Off by default.
	DynamicMetadata bool
	// MaxDescriptors bounds the descriptors of one request, MaxEntries the entries of one
	// descriptor; a request past either is INVALID_ARGUMENT. 0 means
	// DefaultMaxDescriptors and DefaultMaxEntries.
	MaxDescriptors, MaxEntries int
	// Concurrent makes the store calls of a request's descriptors at once rather than one
	// after the other: worth it when each call is a network round trip.
	Concurrent bool
	// Logger receives the service's logs; the default is slog.Default().
	Logger *slog.Logger
}

func (o *Options) maxDescriptors() int {
	if o.MaxDescriptors > 0 {
		return o.MaxDescriptors
	}
	return DefaultMaxDescriptors
}

func (o *Options) maxEntries() int {
	if o.MaxEntries > 0 {
		return o.MaxEntries
	}
	return DefaultMaxEntries
}
