// Package adaptivesim runs an adaptive.Limiter in front of a modeled server under
// virtual time and tallies, interval by interval, the offered and admitted requests, the
// in-flight limit and the latency; NewChart draws the limit and the latency with package
// internal/chart. The ratekit CLI prints its results ("ratekit sim --algo
// adaptive-gradient").
//
// The server has a fixed number of workers (its capacity) and serves each request in a
// fixed time; an admitted request that finds every worker busy waits in a FIFO queue, so
// latency grows with queueing, in proportion to the requests in flight beyond the
// capacity. Requests arrive evenly at a multiple of what the workers can serve, and the
// capacity may drop (or rise) at one moment of the run. Everything runs on a clockx.Fake
// in one goroutine: a minute of traffic takes milliseconds and every run with the same
// inputs gives the same numbers.
package adaptivesim
