// Package chart draws the repository's charts as standalone SVG documents, with the
// standard library only: the simulators' (internal/sim and internal/adaptivesim, "ratekit
// sim --svg"), the benchmark bars (bench/cmd/chart) and the diagrams of docs/.
//
// A [Chart] is one or more panels of series of (x, y) points, each drawn as a line or as a
// step line, over a shared x axis, with grid lines and ticks, a title and subtitle wrapped
// to the width, and a legend. One panel gets a legend on its right; several are laid out in
// a grid of Chart.Columns, each headed by the names of its series. Panels without a YLabel
// of their own share one y scale (small multiples); a panel with one has its own scale and
// label (a limit above a latency, say). [Bars] draws horizontal bars in titled groups.
//
// [Doc] is the layer under both: an SVG document assembled from text, lines, paths and
// shapes, with XML escaping and one number format, for diagrams that are not charts of
// series. [TextWidth] estimates the width of a text, so that layouts leave room for it.
package chart
