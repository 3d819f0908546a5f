package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSummarize: the output is plain go test's (a failing subtest under its parent, the
// package lines), and every test is counted once, subtests apart.
func TestSummarize(t *testing.T) {
	t.Parallel()
	in, err := os.ReadFile("testdata/fail.json") // go test -json of a package with a failing subtest
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	c, names, err := summarize(strings.NewReader(string(in)), &out)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(names, ","), "jsdemo.TestB"; got != want {
		t.Errorf("failed names %q, want %q", got, want)
	}
	want := "--- FAIL: TestB (0.00s)\n    --- FAIL: TestB/x (0.00s)\n        a_test.go:4: boom\nFAIL\nFAIL\tjsdemo\t0.002s\n"
	if got := out.String(); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
	if want := (counts{tests: 4, subtests: 2, skipped: 1, failed: 1, subFailed: 1, packages: 1, pkgFailures: 1}); c != want {
		t.Errorf("counts %+v, want %+v", c, want)
	}
}

// TestSummarizeBuildFailure: a package that does not build shows its errors and counts as
// failed; lines that are not events pass through; the package lines of -v that plain go
// test omits are left out.
func TestSummarizeBuildFailure(t *testing.T) {
	t.Parallel()
	in := `go: downloading example.com/x v1.0.0
{"ImportPath":"p [p.test]","Action":"build-output","Output":"# p\n"}
{"ImportPath":"p [p.test]","Action":"build-output","Output":"./a_test.go:6:1: undefined: X\n"}
{"ImportPath":"p [p.test]","Action":"build-fail"}
{"Action":"start","Package":"p"}
{"Action":"output","Package":"p","Output":"FAIL\tp [build failed]\n"}
{"Action":"fail","Package":"p","Elapsed":0,"FailedBuild":"p [p.test]"}
{"Action":"output","Package":"q","Output":"?   \tq\t[no test files]\n"}
{"Action":"output","Package":"r","Output":"testing: warning: no tests to run\n"}
{"Action":"output","Package":"r","Output":"PASS\n"}
{"Action":"output","Package":"r","Output":"ok  \tr\t0.01s [no tests to run]\n"}
{"Action":"pass","Package":"r","Elapsed":0.01}
{"Action":"skip","Package":"q","Elapsed":0}
`
	var out strings.Builder
	c, names, err := summarize(strings.NewReader(in), &out)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(names, ","), "p"; got != want {
		t.Errorf("failed names %q, want %q", got, want)
	}
	want := "go: downloading example.com/x v1.0.0\n# p\n./a_test.go:6:1: undefined: X\nFAIL\tp [build failed]\n?   \tq\t[no test files]\nok  \tr\t0.01s [no tests to run]\n"
	if got := out.String(); got != want {
		t.Errorf("output:\n%s\nwant:\n%s", got, want)
	}
	if want := (counts{packages: 3, pkgFailures: 1}); c != want {
		t.Errorf("counts %+v, want %+v", c, want)
	}
}

// TestTally: the counts of several runs add up in the tally file.
func TestTally(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tally")
	runs := []struct {
		c     counts
		names []string
	}{
		{counts{tests: 3, subtests: 10, skipped: 1, packages: 2}, nil},
		{counts{tests: 4, subSkipped: 2, failed: 1, packages: 1, pkgFailures: 1}, []string{"distributed.TestX"}},
	}
	for _, r := range runs {
		if err := appendTally(path, r.c, r.names); err != nil {
			t.Fatal(err)
		}
	}
	got, names, err := readTally(path)
	if err != nil {
		t.Fatal(err)
	}
	if s, want := summary(got, names), "7 tests ran (and 10 subtests), 1 skipped (and 2 subtests), 1 failed (and 0 subtests); failed: distributed.TestX"; s != want {
		t.Errorf("summary = %q, want %q", s, want)
	}
	if want := (counts{tests: 7, subtests: 10, skipped: 1, subSkipped: 2, failed: 1, packages: 3, pkgFailures: 1}); got != want {
		t.Errorf("total %+v, want %+v", got, want)
	}
	if s, want := got.String(), "7 tests ran (and 10 subtests), 1 skipped (and 2 subtests), 1 failed (and 0 subtests)"; s != want {
		t.Errorf("String() = %q, want %q", s, want)
	}
}
