package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkOneLine checks that a failed run printed nothing on stdout and one line on stderr
// holding want.
func checkOneLine(t *testing.T, args []string, code int, out, errOut string, wantCode int, want string) {
	t.Helper()
	if code != wantCode || out != "" {
		t.Errorf("%q: exit %d, stdout %q; want %d and nothing", args, code, out, wantCode)
	}
	if strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, "ratekit: sim: ") || !strings.Contains(errOut, want) {
		t.Errorf("%q: stderr %q; want one line \"ratekit: sim: ...%s...\"", args, errOut, want)
	}
}

func TestSimIntervalTooSmallForDuration(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--interval", "1ms", "--duration", "60s"}, "--interval 1ms is too small for --duration 60s: 60000 intervals, at most 10000 (use --interval 6ms or more)"},
		{[]string{"--interval", "1ns", "--duration", "1s"}, "(use --interval 100µs or more)"},
		{[]string{"--duration", "24h"}, "--interval 1s is too small for --duration 86400s"},
	} {
		args := append([]string{"sim"}, tc.args...)
		code, out, errOut := runCLI(t, args...)
		checkOneLine(t, args, code, out, errOut, exitUsage, tc.want)
	}
	// The limit itself is fine.
	if code, _, errOut := runCLI(t, "sim", "--interval", "1ms", "--duration", "10s"); code != 0 {
		t.Errorf("10000 intervals: exit %d, stderr %q", code, errOut)
	}
}

func TestSimBadSVGPathFailsBeforeRunning(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, path := range []string{filepath.Join(dir, "missing", "chart.svg"), dir} {
		args := []string{"sim", "--duration", "2s", "--svg", path}
		code, out, errOut := runCLI(t, args...)
		checkOneLine(t, args, code, out, errOut, exitFailure, "sim: --svg: open "+path+": ")
	}
}

// TestSimFailedRunKeepsTheSVGPath: the file is opened before the run; a run that fails
// after that removes the file it created and leaves an existing one as it was.
func TestSimFailedRunKeepsTheSVGPath(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fresh, old := filepath.Join(dir, "fresh.svg"), filepath.Join(dir, "old.svg")
	if err := os.WriteFile(old, []byte("old chart"), 0o666); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fresh, old} {
		args := []string{"sim", "--algo", "fixed-window", "--window", "0s", "--svg", path}
		code, out, errOut := runCLI(t, args...)
		checkOneLine(t, args, code, out, errOut, exitUsage, "Window must be at least")
	}
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("the failed run left %s behind (%v)", fresh, err)
	}
	if got, err := os.ReadFile(old); err != nil || string(got) != "old chart" {
		t.Errorf("%s holds %q (%v) after a failed run, want it unchanged", old, got, err)
	}
	// A successful run replaces the whole content, however long the old one was.
	if err := os.WriteFile(old, []byte(strings.Repeat("x", 1<<20)), 0o666); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "sim", "--duration", "2s", "--svg", old); code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if got, err := os.ReadFile(old); err != nil || !strings.HasSuffix(string(got), "</svg>\n") {
		t.Errorf("%s does not end with the chart (%v): ...%q", old, err, got[max(0, len(got)-40):])
	}
}

func TestSimErrorsHaveOnePrefix(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"sim", "--duration", "48h"},
		{"sim", "--rate", "1000000", "--duration", "1h"},
		{"sim", "--traffic", "wave"},
		{"sim", "--algo", "fixed-window", "--window", "0s"},
		{"sim", "--compare", "gcra,nope"},
		{"sim", "--bogus"},
	} {
		_, _, errOut := runCLI(t, args...)
		if !strings.HasPrefix(errOut, "ratekit: sim: ") || strings.Count(errOut, "sim: ") != 1 {
			t.Errorf("%q: stderr %q, want \"ratekit: sim: \" once and no other \"sim: \"", args, errOut)
		}
	}
}
