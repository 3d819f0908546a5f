// Package sim runs an algorithm against a synthetic traffic pattern under virtual time and
// tallies what it admitted, delayed and denied, interval by interval, and draws the result
// as a chart. The ratekit CLI ("ratekit sim") prints its results.
//
// A simulation ([Run]) uses the in-memory store and a clockx.Fake, so a minute of traffic
// takes milliseconds and every run with the same inputs gives the same numbers. Requests
// arrive open-loop: a request granted with a wait (wait mode, Config.MaxWait > 0) does not
// hold back the ones after it, as with many independent clients.
//
// A [Chart] is drawn as an SVG document by internal/chart ([Chart.WriteSVG]:
// axes, grid, a title wrapped to the width, a legend, one step line per series; from four
// series on, one panel per series) or as plain text ([Chart.WriteASCII]).
package sim
