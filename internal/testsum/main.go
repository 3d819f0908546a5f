package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Output  string
}

// counts are the results of one or more runs.
type counts struct {
	tests, subtests       int // that ran, skipped ones included
	skipped, subSkipped   int
	failed, subFailed     int
	packages, pkgFailures int // packages with a result; those that failed (build failures too)
}

func (c *counts) add(o counts) {
	c.tests += o.tests
	c.subtests += o.subtests
	c.skipped += o.skipped
	c.subSkipped += o.subSkipped
	c.failed += o.failed
	c.subFailed += o.subFailed
	c.packages += o.packages
	c.pkgFailures += o.pkgFailures
}

func (c counts) String() string {
	return fmt.Sprintf("%d tests ran (and %d subtests), %d skipped (and %d subtests), %d failed (and %d subtests)",
		c.tests, c.subtests, c.skipped, c.subSkipped, c.failed, c.subFailed)
}

// failure names a test that failed, or a package that failed without a failing test (a
// build failure, a panic, a timeout), so that make test's last line names it.
func failure(pkg, test string) string {
	pkg = strings.TrimPrefix(pkg, "github.com/ratekit/limiter/")
	if test == "" {
		return pkg
	}
	return pkg + "." + test
}

func main() {
	tally := flag.String("tally", "", "add this run's counts to `file`")
	total := flag.String("total", "", "print the sum of the counts in `file` and exit")
	flag.Parse()
	if *total != "" {
		c, names, err := readTally(*total)
		if err != nil {
			fmt.Fprintln(os.Stderr, "testsum:", err)
			os.Exit(1)
		}
		fmt.Println(summary(c, names))
		return
	}
	c, names, err := summarize(os.Stdin, os.Stdout)
	if err == nil && *tally != "" {
		err = appendTally(*tally, c, names)
	}
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "testsum:", err)
		os.Exit(1)
	case c.packages == 0:
		fmt.Fprintln(os.Stderr, "testsum: no test result: go test failed before running any test")
		os.Exit(1)
	case c.failed+c.subFailed+c.pkgFailures > 0:
		os.Exit(1)
	}
}

// summary is the counts, followed by the names of what failed, if anything did.
func summary(c counts, failed []string) string {
	if len(failed) == 0 {
		return c.String()
	}
	return c.String() + "; failed: " + strings.Join(failed, ", ")
}

// summarize copies what plain go test prints from the events read from r to w, and
// counts the results; it returns the names of the top-level tests that failed and of the
// packages that failed without a failing test. A line that is not an event (go test's own
// messages) is copied.
func summarize(r io.Reader, w io.Writer) (counts, []string, error) {
	var c counts
	var names []string
	pkgTestFailed := map[string]bool{}
	out := bufio.NewWriter(w)
	defer out.Flush()
	buffered := map[string][]string{} // Package + "\x00" + Test -> output lines until it ends
	failed := map[string][]string{}   // the same -> the reports of its subtests that failed
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(out, "%s\n", line)
			continue
		}
		id := e.Package + "\x00" + e.Test
		sub := strings.Contains(e.Test, "/")
		switch {
		case e.Action == "build-output":
			out.WriteString(e.Output)
		case e.Action == "build-fail":
			// The package's own fail event follows and counts it.
		case e.Test == "" && e.Action == "output":
			// -json runs the tests as -v does, whose package lines plain go test omits.
			if e.Output != "PASS\n" && e.Output != "testing: warning: no tests to run\n" {
				out.WriteString(e.Output)
			}
		case e.Test == "" && (e.Action == "pass" || e.Action == "fail" || e.Action == "skip"):
			c.packages++
			if e.Action == "fail" {
				c.pkgFailures++
				still := false
				// Tests still running when the package failed (a panic, a timeout).
				for k, lines := range buffered {
					if strings.HasPrefix(k, e.Package+"\x00") {
						writeLines(out, append(own(lines), indent(failed[k])...))
						delete(buffered, k)
						if t := strings.TrimPrefix(k, e.Package+"\x00"); t != "" && !strings.Contains(t, "/") {
							names, still = append(names, failure(e.Package, t)+" (did not end)"), true
						}
					}
				}
				if !pkgTestFailed[e.Package] && !still {
					names = append(names, failure(e.Package, ""))
				}
			}
		case e.Action == "output":
			buffered[id] = append(buffered[id], e.Output)
		case e.Action == "pass" || e.Action == "skip" || e.Action == "fail":
			report := failed[id]
			delete(failed, id)
			if e.Action == "fail" {
				report = append(own(buffered[id]), indent(report)...)
				if i := strings.LastIndex(e.Test, "/"); i >= 0 {
					// Reported under its parent, as plain go test does.
					p := e.Package + "\x00" + e.Test[:i]
					failed[p] = append(failed[p], report...)
				} else {
					writeLines(out, report)
				}
			}
			delete(buffered, id)
			if sub {
				c.subtests++
			} else {
				c.tests++
			}
			switch {
			case e.Action == "skip" && sub:
				c.subSkipped++
			case e.Action == "skip":
				c.skipped++
			case e.Action == "fail" && sub:
				c.subFailed++
			case e.Action == "fail":
				c.failed++
				names = append(names, failure(e.Package, e.Test))
				pkgTestFailed[e.Package] = true
			}
		}
	}
	return c, names, sc.Err()
}

// own returns a failed test's own report as plain go test writes it: its "--- FAIL"
// line first, then what it logged, without the "=== RUN" lines and their kin.
func own(lines []string) []string {
	var head, rest []string
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "=== "):
		case strings.HasPrefix(l, "--- "):
			head = append(head, l)
		default:
			rest = append(rest, l)
		}
	}
	return append(head, rest...)
}

// indent indents a subtest's report under its parent's.
func indent(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = "    " + l
	}
	return out
}

func writeLines(w io.StringWriter, lines []string) {
	for _, l := range lines {
		w.WriteString(l)
	}
}

// appendTally adds c to the file at path, one line per run, and a line "fail NAME" for each
// name of what failed.
func appendTally(path string, c counts, failed []string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "%d %d %d %d %d %d %d %d\n", c.tests, c.subtests, c.skipped, c.subSkipped,
		c.failed, c.subFailed, c.packages, c.pkgFailures)
	for _, name := range failed {
		if err == nil {
			_, err = fmt.Fprintf(f, "fail %s\n", name)
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// readTally sums the lines appendTally wrote to the file at path, and returns the names
// of what failed.
func readTally(path string) (counts, []string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return counts{}, nil, err
	}
	var sum counts
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if name, ok := strings.CutPrefix(line, "fail "); ok {
			names = append(names, name)
			continue
		}
		if line == "" {
			continue
		}
		var c counts
		if _, err := fmt.Sscan(line, &c.tests, &c.subtests, &c.skipped, &c.subSkipped,
			&c.failed, &c.subFailed, &c.packages, &c.pkgFailures); err != nil {
			return counts{}, nil, fmt.Errorf("%s: bad line %q: %v", path, line, err)
		}
		sum.add(c)
	}
	return sum, names, nil
}
