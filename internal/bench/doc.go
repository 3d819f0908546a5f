// Package bench runs real-time load against a store.Store and measures it: decisions per
// second, latency percentiles and the admitted ratio. The ratekit CLI ("ratekit bench")
// prints its results.
//
// Every worker goroutine keeps its own counters and its own latency [Histogram] (a
// log-bucketed histogram in the manner of HdrHistogram, with a relative error below 3.2 %),
// so the measured calls share nothing but the store; the histograms are merged when the
// run ends.
package bench
