// Command ratekitd is an Envoy rate limit service (envoy.service.ratelimit.v3) built on
// github.com/ratekit/limiter: every algorithm, the in-memory and Redis stores, the failure
// policy, the circuit breaker, the denial cache and quota leasing, for any gateway that
// speaks the RLS protocol (Envoy, Istio, Envoy Gateway, Contour, Gloo).
//
//	ratekitd --config examples/                         # in memory
//	ratekitd --config /etc/ratelimit --redis redis://redis:6379
//	ratekitd --config /etc/ratelimit --redis redis+cluster://n1:6379,n2:6379 --denial-cache
//	ratekitd --config /etc/ratelimit --redis rediss+sentinel://s1:26379,s2:26379/mymaster --redis-tls-ca ca.pem
//	ratekitd --config-type GRPC_XDS_SOTW --xds-server envoy-gateway:18001 --xds-node-id envoy-ratelimit
//
// The Redis flags default to envoyproxy/ratelimit's environment variables (REDIS_URL,
// REDIS_TYPE, REDIS_AUTH, REDIS_TLS and its certificates), so a deployment keeps its
// environment. The configuration is envoyproxy/ratelimit's YAML, with our own keys for the
// algorithm, a rate string and charge (usage reported after the fact, as Envoy's
// apply_on_stream_done sends it); it is reloaded when its files change. With
// --config-type GRPC_XDS_SOTW (CONFIG_TYPE, as Envoy Gateway sets it) the rules come from
// an xDS server instead, as RateLimitConfig resources. gRPC listens on :8081 and HTTP
// (/json, /healthcheck, /metrics) on :8080, as in envoyproxy/ratelimit. SIGTERM drains:
// /healthcheck fails, calls in flight finish, then the process exits. docs/rls.md has the
// details.
package main
