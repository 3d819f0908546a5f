package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestMain(m *testing.M) {
	redis.SetLogger(discardLogger{}) // as main does, before any test runs
	os.Exit(m.Run())
}

// runCLI runs the command line args and returns the exit status, stdout and stderr.
func runCLI(tb testing.TB, args ...string) (int, string, string) {
	tb.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
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
		{"sim", "--rate", "NaN"},
		{"sim", "--rate", "2e6"},
		{"sim", "--burst", "-1"},
		{"sim", "--burst", "0"}, // the library refuses Burst 0: leave the flag out for the default
		{"sim", "--algo", "fixed-window", "--limit", "0"},
		{"sim", "--quota", "100/fortnight"},
		{"sim", "--quota", "0/s"},
		{"sim", "--quota", "100/min", "--rate", "3"},
		{"sim", "--quota", "100/min", "--window", "1s"},
		{"bench", "--quota", "100 per"},
		{"sim", "--duration", "0s"},
		{"sim", "--duration", "48h"},
		{"sim", "--rate", "1000000", "--duration", "24h"}, // too many requests
		{"sim", "--interval", "0s"},
		{"sim", "--interval", "1ns", "--duration", "1s"}, // too many rows
		{"sim", "extra"},
		{"sim", "--mode", "queue"},
		{"sim", "--max-wait", "1s"}, // allow mode
		{"sim", "--mode", "wait", "--max-wait", "0s"},
		{"sim", "--compare", "gcra,nope"},
		{"sim", "--compare", "gcra,gcra"},
		{"sim", "--compare", "gcra,token-bucket", "--algo", "gcra"},
		{"sim", "--algo", "fixed-window", "--window", "0s"},
		{"sim", "--algo", "smooth-warmup", "--warmup", "-1s"},
		{"bench", "--bogus"},
		{"bench", "--algo", "nope"},
		{"bench", "--store", "postgres"},
		{"bench", "--store", "redis://localhost:6379/abc"},
		{"bench", "--store", "redis://[::1"},
		{"bench", "--store", "http://localhost:6379"},
		{"bench", "--goroutines", "0"},
		{"bench", "--keys", "-5"},
		{"bench", "--duration", "-1s"},
		{"bench", "positional"},
	} {
		code, _, errOut := runCLI(t, args...)
		if code != exitUsage {
			t.Errorf("%q: exit %d, want %d (stderr %q)", args, code, exitUsage, errOut)
		}
		if lines := strings.Count(errOut, "\n"); lines != 1 || !strings.HasPrefix(errOut, "ratekit: ") {
			t.Errorf("%q: stderr has %d lines, want 1 starting with \"ratekit: \": %q", args, lines, errOut)
		}
	}
}

func TestUsageErrorsNameTheProblem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fly"}, `unknown command "fly"`},
		{[]string{"sim", "--algo", "nope"}, `unknown algorithm "nope" (want one of fixed-window, sliding-log, sliding-counter, token-bucket, leaky-bucket, gcra, smooth-bursty, smooth-warmup)`},
		{[]string{"sim", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"bench", "--store", "redis://localhost:6379/abc"}, `bad Redis URL "redis://localhost:6379/abc"`},
		{[]string{"bench", "--store", "postgres"}, `unknown store "postgres"`},
	} {
		_, _, errOut := runCLI(t, tc.args...)
		if !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: stderr %q lacks %q", tc.args, errOut, tc.want)
		}
	}
}

func TestHelpExitsZero(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"help"}, []string{"usage: ratekit <command>", "ratekit sim [--algo NAME | --compare", "ratekit bench [--store memory|redis://", "smooth-warmup",
			"adaptive-aimd, adaptive-gradient (sim only"}},
		{[]string{"--help"}, []string{"usage: ratekit <command>"}},
		{[]string{"sim", "-h"}, []string{"usage: ratekit sim [flags]", "-compare", "-max-wait", "-svg file", "smooth-warmup;",
			"or adaptive-aimd, adaptive-gradient:"}},
		{[]string{"sim", "--algo", "adaptive-aimd", "-h"}, []string{"usage: ratekit sim [flags]", "-capacity", "-drop-at"}},
		{[]string{"bench", "--help"}, []string{"usage: ratekit bench [flags]", "-goroutines", "-store", "-keys"}},
	} {
		code, out, errOut := runCLI(t, tc.args...)
		if code != exitOK || errOut != "" {
			t.Errorf("%q: exit %d, stderr %q; want 0 and nothing", tc.args, code, errOut)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%q: stdout lacks %q:\n%s", tc.args, w, out)
			}
		}
	}
}

func TestOneLine(t *testing.T) {
	t.Parallel()
	if got, want := oneLine("a\nb  c\n"), "a b c"; got != want {
		t.Errorf("oneLine = %q, want %q", got, want)
	}
}
