package main

import (
	"slices"
	"testing"

	"github.com/ratekit/limiter/algo"
)

// TestAlgorithmTableCoversSamples: every algorithm of package algo (its samples, less the
// wrappers such as Penalty, which take a rule rather than flags) has a line in the table,
// so an algorithm added to algo without its CLI line is caught here.
func TestAlgorithmTableCoversSamples(t *testing.T) {
	t.Parallel()
	for _, a := range algo.Samples() {
		if _, wrapper := a.(interface{ Unwrap() algo.Algorithm }); wrapper {
			continue
		}
		if !slices.Contains(algorithmNames, a.Name()) {
			t.Errorf("%v: no line of the table is called %q", a, a.Name())
		}
	}
}
