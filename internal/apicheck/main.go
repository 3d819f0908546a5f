// Command apicheck keeps the public API compatible from one release to the next, as Go's
// own api/ files do for the standard library.
//
// The API of a release is one file, api/<version>.txt: one line per exported name of
// every public package of the repository's modules (the core and each nested module;
// internal, main and testdata packages are not public), each with its declaration as
// written: a function's signature, a struct's exported fields one by one, an interface's
// methods one by one, a constant's or a variable's type. A release adds lines; a line of
// the latest release that is gone or changed is an incompatible change, allowed only when
// api/except.txt lists it, each with its migration after a "#".
//
//	go run ./internal/apicheck -write api/v0.2.0.txt   # at a release: record its API
//	go run ./internal/apicheck                         # check against the latest release
//
// make test runs the check through this package's test. The lines are read from the
// syntax alone (go/ast): nothing is built, so the check takes well under a second.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

func main() {
	write := flag.String("write", "", "write the API of the working tree to `file` (at a release) and exit")
	root := flag.String("root", ".", "the repository's root")
	flag.Parse()
	lines, err := API(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicheck:", err)
		os.Exit(2)
	}
	if *write != "" {
		if err := os.WriteFile(*write, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "apicheck:", err)
			os.Exit(2)
		}
		return
	}
	release, broken, err := Check(*root, lines)
	switch {
	case err != nil:
		fmt.Fprintln(os.Stderr, "apicheck:", err)
		os.Exit(2)
	case release == "":
		fmt.Println("apicheck: no release recorded in api/ yet: nothing to keep compatible")
	case len(broken) > 0:
		fmt.Fprintf(os.Stderr, "apicheck: %d incompatible changes since %s (record each in api/except.txt with its migration, and in CHANGELOG.md):\n", len(broken), release)
		for _, l := range broken {
			fmt.Fprintln(os.Stderr, "  -", l)
		}
		os.Exit(1)
	default:
		fmt.Printf("apicheck: compatible with %s\n", release)
	}
}

// Check compares the API lines of the working tree with those of the latest release
// recorded under root/api (release "" when there is none): broken lists the release's
// lines that are gone, less those api/except.txt allows.
func Check(root string, lines []string) (release string, broken []string, err error) {
	release, err = latest(filepath.Join(root, "api"))
	if err != nil || release == "" {
		return release, nil, err
	}
	old, err := readLines(filepath.Join(root, "api", release+".txt"))
	if err != nil {
		return release, nil, err
	}
	allowed, err := readLines(filepath.Join(root, "api", "except.txt"))
	if err != nil && !os.IsNotExist(err) {
		return release, nil, err
	}
	now := map[string]bool{}
	for _, l := range lines {
		now[l] = true
	}
	ok := map[string]bool{}
	for _, l := range allowed {
		line, _, _ := strings.Cut(l, " #")
		ok[strings.TrimSpace(line)] = true
	}
	for _, l := range old {
		if !now[l] && !ok[l] {
			broken = append(broken, l)
		}
	}
	return release, broken, nil
}

// latest returns the newest version among dir's v*.txt files (semantic versions, as
// vMAJOR.MINOR.PATCH), or "" when there is none.
func latest(dir string) (string, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	var best string
	var bestV [3]int
	for _, e := range entries {
		v, ok := strings.CutSuffix(e.Name(), ".txt")
		if !ok {
			continue
		}
		nums, ok := semver(v)
		if !ok {
			continue
		}
		if best == "" || less(bestV, nums) {
			best, bestV = v, nums
		}
	}
	return best, nil
}

// semver parses "vMAJOR.MINOR.PATCH".
func semver(v string) ([3]int, bool) {
	var out [3]int
	rest, ok := strings.CutPrefix(v, "v")
	parts := strings.Split(rest, ".")
	if !ok || len(parts) != 3 {
		return out, false
	}
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return out, false
		}
		out[i] = n
	}
	return out, true
}

func less(a, b [3]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// readLines returns the non-empty lines of the file at path that are not comments.
func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out, sc.Err()
}

// sorted returns lines sorted, without repeats.
func sorted(lines []string) []string {
	sort.Strings(lines)
	out := lines[:0]
	for i, l := range lines {
		if i == 0 || l != lines[i-1] {
			out = append(out, l)
		}
	}
	return out
}
