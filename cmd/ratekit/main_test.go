package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestSimPrintsTable(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := run([]string{"sim", "--algo", "fixed-window", "--rate", "10", "--traffic", "steady", "--duration", "3s"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit %d, stderr %q", code, errOut.String())
	}
	got := out.String()
	for _, want := range []string{"fixed-window(limit=10, window=1s)", "     0s       15       10        5", "   total       45       30       15"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}

func TestUsageErrorsExitTwoWithOneLine(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{},
		{"fly"},
		{"sim", "--algo", "nope"},
		{"sim", "--bogus"},
		{"sim", "--traffic", "wave"},
		{"sim", "--rate", "-1"},
		{"sim", "--duration", "0s"},
		{"sim", "extra"},
	} {
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
		if lines := strings.Count(errOut.String(), "\n"); lines != 1 {
			t.Errorf("%q: stderr has %d lines, want 1: %q", args, lines, errOut.String())
		}
	}
}
