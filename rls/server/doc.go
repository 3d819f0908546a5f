// Package server is ratekitd's Envoy rate limit service (envoy.service.ratelimit.v3) over
// the limiter library: Load reads envoyproxy/ratelimit's YAML (with our algorithm and rate
// keys) and names the file, line and field of any error; New returns the Service that
// answers ShouldRateLimit, deciding each descriptor's rule with a limiter.Limiter over one
// store.Store; NewHTTP serves /json, /healthcheck and /metrics; a Watcher reloads the
// configuration when its files change, keeping the running one when they do not load; an
// XDS source follows an xDS management server's RateLimitConfig resources instead
// (ConfigFromXDS reads them with the same loader), ACKing the sets that load and NACKing
// the others.
//
// A descriptor is counted under its domain and entries (see limiterKey), never under
// anything of the configuration, so counts survive reloads, and several ratekitd
// processes on one Redis enforce one limit together. docs/rls.md in the repository has
// the format, the answers and the figures.
package server
