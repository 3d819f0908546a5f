// Package sim runs an algorithm against a synthetic traffic pattern under virtual time and
// tallies what it admitted, interval by interval. The ratekit CLI prints its results; the
// simulation uses the in-memory store and a clockx.Fake, so a minute of traffic takes
// milliseconds and every run with the same inputs prints the same table.
package sim
