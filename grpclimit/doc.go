// Package grpclimit is gRPC server interceptors, unary and stream, that rate-limit calls
// with a limiter.Limiter and answer the ones over the limit with codes.ResourceExhausted
// and a google.rpc.RetryInfo detail saying when to retry.
//
//	st, err := local.New()
//	...
//	l, err := limiter.New(st, algo.TokenBucket{Rate: 100, Burst: 200})
//	...
//	key, err := grpclimit.ByMetadata("x-api-key")
//	...
//	lim, err := grpclimit.New(l,
//		grpclimit.WithKey(key),
//		grpclimit.WithSkipMethods("/grpc.health.v1.Health/Check", "/grpc.health.v1.Health/Watch"))
//	...
//	srv := grpc.NewServer(
//		grpc.ChainUnaryInterceptor(lim.Unary()),
//		grpc.ChainStreamInterceptor(lim.Stream()))
//
// It is a module of its own (github.com/ratekit/limiter/grpclimit), so programs that do
// not use gRPC do not get its dependencies.
//
// # Keys
//
// Every key has its own limit. A KeyFunc computes it from the call's context and method:
// ByPeer (the connection's IP address, an IPv6 one by its /64; the default), ByMetadata
// (an API key, a tenant ID) or any function of your own given to WithKey, for example one
// that reads the user an authenticating interceptor put in the context (chain that one
// first).
//
// Key functions have the shape of httplimit's, with the call in place of the request:
// they return (key, error), and their errors are httplimit's (httplimit.ErrMissingKey
// blames the client, httplimit.ErrInvalidAddress the server). ByPeer is httplimit.ByIP's
// twin, ByMetadata httplimit.ByHeader's; a constructor that takes an argument it checks
// returns (KeyFunc, error), the error wrapping algo.ErrInvalidConfig.
//
// # What the client sees
//
//	call                                   status             handler     details
//	allowed                                handler's          called
//	denied                                 ResourceExhausted  not called  RetryInfo
//	denied, cost above what the limit      ResourceExhausted  not called  none: waiting would
//	  can ever grant                                                        not help
//	store closed                           Unavailable        not called  (error handler)
//	store down, FailOpen                   handler's          called
//	store down, Fallback allows            handler's          called
//	store down, Fallback denies            ResourceExhausted  not called  RetryInfo
//	store down, FailClosed                 Unavailable        not called  (error handler)
//	KeyFunc error: httplimit.ErrMissingKey InvalidArgument    not called  (error handler)
//	other KeyFunc error, negative cost,    Internal           not called  (error handler)
//	  a limiter that is not configured
//	context ended before the decision      Canceled or        not called  (error handler)
//	                                         DeadlineExceeded
//	cost 0, method in WithSkipMethods      handler's          called      (exempt)
//
// The failure policy is the limiter's own (limiter.WithFailurePolicy): the interceptors
// only carry out its decision. WithErrorHandler replaces the error answers. Status
// messages are fixed texts; they never carry the error (which may name keys, addresses or
// backends).
//
// RetryInfo's retry_delay is the Decision's RetryAfter, exact (not rounded to seconds,
// as HTTP's Retry-After must be). gRPC clients read it with status.FromError and
// Status.Details:
//
//	for _, d := range status.Convert(err).Details() {
//		if ri, ok := d.(*errdetails.RetryInfo); ok {
//			wait := ri.GetRetryDelay().AsDuration()
//			...
//		}
//	}
//
// # RateLimit metadata
//
// Every call the limiter's store decided, allowed or denied, carries the values of
// httplimit's RateLimit-Policy and RateLimit headers as header metadata, keys
// "ratelimit-policy" and "ratelimit", one entry per policy (per rule of a composite
// made by limiter.All): for example `"default";q=100;w=60` and `"default";r=42;t=17`.
// A call the failure policy answered carries none; WithoutMetadata leaves them out.
// docs/httplimit.md explains each value.
//
// # Streams
//
// A stream is limited once, when it opens, with the cost WithCost gives it: a limiter
// of streams opened, not of messages sent. A long-lived stream (a Watch) holds nothing
// of the limit while it runs.
//
// # Time
//
// The store decides what "now" is, so tests run the interceptors over a store on a
// clockx.Fake (local.WithClock): no real sleeps.
package grpclimit
