// Package adaptive is a concurrency limiter whose limit finds itself: instead of a fixed
// number of requests in flight, the limit moves with the latency and the drops it
// observes, in the spirit of Netflix's concurrency-limits, and an optional load shedder
// protects the process when its machine is overloaded, in the spirit of Alibaba
// Sentinel's system-adaptive (BBR) protection.
//
//	l, err := adaptive.New(adaptive.Gradient{})
//	...
//	tok, ok, err := l.TryAcquire(ctx)
//	if err != nil {
//		return err // ctx is done
//	}
//	if !ok {
//		return errShed // shed: answer 503
//	}
//	resp, err := callTheService(ctx)
//	tok.Done(adaptive.Success) // or Timeout, Overload, Ignore
//
// httplimit.Concurrency wraps a Limiter as net/http middleware.
//
// New's errors wrap algo.ErrInvalidConfig and name the bad field.
//
// # Algorithms
//
// An [Algorithm] is a config; its estimator is a deterministic function of the samples
// (one per finished request: when it started, its latency, how many were in flight, and
// whether it was dropped), so it is tested with tables of samples, and time comes only
// from them.
//
//   - [AIMD]: additive increase, multiplicative decrease, like TCP. The limit grows by one
//     per round trip and shrinks by 10% on a drop (a request reported as Timeout or
//     Overload, or slower than AIMD.Timeout). Simple and robust, but it needs a drop
//     signal, and it keeps the service at the edge of dropping.
//   - [Gradient]: compares the short-term latency (one round trip) with the long-term one
//     (the latency without queueing). While they agree within Tolerance the limit grows by
//     √limit per round trip; when requests queue it shrinks in proportion. It needs no
//     threshold and settles at about Tolerance × the service's capacity.
//   - [Fixed]: a limit that never moves, a plain semaphore.
//
// Every algorithm keeps its limit within [Min, Max] (defaults 1 and 1000) and starts at
// Initial (default 20). docs/adaptive.md shows how each moves the limit in a simulated
// server ("ratekit sim --algo adaptive-gradient").
//
// # Load shedding
//
// [WithLoadShedding] adds a second gate: while a load function reports a load at or above
// a threshold (for instance 0.8 of the CPU), a request is also shed when the requests in
// flight reach the capacity the limiter estimates by Little's law, the most successes per
// second times the lowest latency of the last ten seconds. [SystemLoad] reads the
// machine's CPU use from /proc/stat on Linux and falls back to the Go scheduler's latency
// ([SchedulerLoad]) elsewhere; tests inject a constant.
//
// # Time
//
// Latencies are measured on the limiter's clock ([WithClock]); with a clockx.Fake a test
// or simulation decides every latency exactly. TryAcquire never waits.
package adaptive
