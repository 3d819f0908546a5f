package algo

import "slices"

// Samples returns valid configs of every algorithm of this package, a few of each, chosen
// to cover its arithmetic: limits of 1 and of thousands, whole and fractional rates (whose
// emission interval is not a whole number of µs), windows from a few µs to an hour, and
// Penalty around a rule of each kind, once renamed by Named. The conformance suite
// (package store/storetest), the Lua twin tests and the command ratekit range over them,
// so an algorithm is tested everywhere once its file lists its samples. Each call returns
// a new slice, in a fixed order.
func Samples() []Algorithm { return slices.Clone(samples) }

// samples collects what each algorithm's file lists with sample, in the order of the
// files; package initialization fills it before any function of the package can run.
var samples []Algorithm

// sample adds configs to Samples. An algorithm's file lists its own, as
//
//	var _ = sample(DailyQuota{Limit: 1}, DailyQuota{Limit: 5000})
//
// so that adding an algorithm touches no other file of the package.
func sample(cs ...Algorithm) bool {
	samples = append(samples, cs...)
	return true
}
