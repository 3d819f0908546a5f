// Command testsum reads `go test -json` on its standard input and writes what plain
// `go test` would have written (each package's ok/FAIL line, build errors, and the output
// of the tests that failed), so that make test stays readable and CI keeps recognising
// go test's closing lines, then counts the tests that ran, were skipped and failed.
//
//	go test -json ./... | go run ./internal/testsum -tally FILE
//	go run ./internal/testsum -total FILE
//
// -tally adds the counts of one run to FILE; -total prints the sum of every run in FILE,
// which is how make test reports one figure for the module and its nested modules. It
// exits with status 1 when a test, a package or a build failed, or when the input held no
// test result at all (go test failed before running any).
package main
