// Command ratekit shows how each rate-limiting algorithm shapes traffic, and measures how
// fast a store decides.
//
//	ratekit sim --algo token-bucket --rate 10 --burst 20 --traffic burst --duration 10s --svg out.svg
//
// runs the algorithm on the in-memory store under virtual time (a minute of traffic takes
// milliseconds, and every run prints the same numbers) and prints, interval by interval,
// how many requests the traffic offered and how many the algorithm admitted, delayed and
// denied, then an ASCII chart; --svg also writes the chart as an SVG file, and
// --compare a,b,c puts several algorithms on one chart. --quota 100/min (any rate string
// algo.ParseQuota reads) sets the limit and its period in place of --rate, --burst,
// --limit and --window. --charge n=50,every=10s,at=2s also charges usage known after the
// fact (Limiter.Charge) and shows the debt: admitted drops until it is paid.
//
//	ratekit bench --store redis://localhost:6379 --algo gcra --goroutines 64 --duration 10s
//
// runs real-time load against the in-memory store or a Redis and prints decisions per
// second, latency percentiles and the admitted ratio; --cluster host:port,host:port (or
// --store redis+cluster://host:port,host:port) runs it against a Redis Cluster.
//
// Run "ratekit help" for the usage and "ratekit sim -h" or "ratekit bench -h" for every
// flag. Bad flags, commands and algorithms print one line on stderr and exit with status 2.
package main
