// Package otellimit reports what a limiter.Limiter decides as OpenTelemetry metrics: it is
// a limiter.Observer (limiter.WithObserver) recording
//
//   - ratekit.limiter.decisions, a counter of decisions by outcome ("allowed", "denied",
//     "error", "fail_closed", "fail_open", "fallback") and shadow mode;
//   - ratekit.limiter.store.duration, a histogram of the store's latency in seconds (one
//     sample per store call; none when the circuit breaker kept the call from the store);
//   - ratekit.limiter.breaker.state, a gauge of the circuit breaker's state (0 closed,
//     1 open, 2 half-open), and ratekit.limiter.breaker.transitions, a counter of its
//     changes by from and to state;
//
// each with the attribute limiter.name set to the name given to New. It is a module of its
// own, so that the core module does not depend on OpenTelemetry. Any exporter works: the
// Prometheus one is shown in docs/observability.md.
package otellimit
