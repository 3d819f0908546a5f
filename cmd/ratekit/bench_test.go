package main

import (
	"context"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/internal/redistest"
)

// benchRate matches the decisions line of the summary.
var benchRate = regexp.MustCompile(`(?m)^  decisions   (\d+) \((\d+)/s\)$`)

// checkSummary checks that out is the summary of a run that made decisions without errors.
func checkSummary(tb testing.TB, out, title string) {
	tb.Helper()
	if !strings.HasPrefix(out, title) {
		tb.Errorf("summary does not start with %q:\n%s", title, out)
	}
	m := benchRate.FindStringSubmatch(out)
	if m == nil {
		tb.Fatalf("no decisions line in:\n%s", out)
	}
	n, _ := strconv.Atoi(m[1])
	rate, _ := strconv.Atoi(m[2])
	if n <= 0 || rate <= 0 {
		tb.Errorf("decisions %d at %d/s, want both > 0:\n%s", n, rate, out)
	}
	for _, want := range []string{"\n  admitted    ", "\n  errors      0\n", "\n  latency     p50 ", " p99 ", " p999 "} {
		if !strings.Contains(out, want) {
			tb.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

func TestBenchMemory(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCLI(t, "bench", "--store", "memory", "--algo", "sliding-counter",
		"--goroutines", "4", "--keys", "10", "--duration", "200ms")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q; want 0 and nothing (no progress bar off a terminal)", code, errOut)
	}
	checkSummary(t, out, "sliding-counter(limit=10, window=1s) on memory: 4 goroutines, 10 keys\n")
}

func TestBenchRedis(t *testing.T) {
	t.Parallel()
	s := redistest.Start(t)
	// A bucket that takes 1000 s to refill keeps its keys long after the run.
	code, out, errOut := runCLI(t, "bench", "--store", "redis://"+s.Addr()+"/3", "--algo", "gcra",
		"--rate", "1", "--burst", "1000", "--goroutines", "4", "--keys", "50", "--duration", "200ms")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q; want 0 and nothing", code, errOut)
	}
	checkSummary(t, out, "gcra(rate=1/s, burst=1000) on redis "+s.Addr()+" db 3: 4 goroutines, 50 keys\n")

	// The keys went to db 3, under the bench's prefix, and nowhere else.
	ctx := context.Background()
	db3 := redis.NewClient(&redis.Options{Addr: s.Addr(), DB: 3})
	t.Cleanup(func() { _ = db3.Close() })
	keys, err := db3.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	// Which of the 50 keys the random picks reached in 200 ms depends on the scheduler:
	// every key must be a bench key, one Redis key each, and at least one was used (the
	// summary counts decisions), at most as many as there were decisions.
	decisions, _ := strconv.Atoi(benchRate.FindStringSubmatch(out)[1])
	if len(keys) == 0 || len(keys) > min(50, decisions) {
		t.Errorf("db 3 holds %d keys after %d decisions, want 1 to %d (one per bench key used): %q",
			len(keys), decisions, min(50, decisions), keys)
	}
	benchKey := regexp.MustCompile(`^` + regexp.QuoteMeta(benchPrefix) + `\{k([0-9]+)\}:[a-z0-9-]+$`)
	seen := map[string]bool{}
	for _, k := range keys {
		m := benchKey.FindStringSubmatch(k)
		if m == nil {
			t.Errorf("key %q is not %sk<n>}:<slot>", k, benchPrefix+"{")
			continue
		}
		if n, _ := strconv.Atoi(m[1]); n >= 50 || seen[m[1]] {
			t.Errorf("key %q: want one Redis key per bench key k0 to k49", k)
		}
		seen[m[1]] = true
	}
	if n, err := s.Client(t).DBSize(ctx).Result(); err != nil || n != 0 {
		t.Errorf("db 0 holds %d keys (%v), want 0", n, err)
	}
}

func TestBenchUnreachableRedisExitsOne(t *testing.T) {
	t.Parallel()
	// A port that was just free: nothing listens there.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	code, out, errOut := runCLI(t, "bench", "--store", "redis://"+addr, "--duration", "10s")
	if code != exitFailure {
		t.Errorf("exit %d, want %d", code, exitFailure)
	}
	if out != "" {
		t.Errorf("stdout = %q, want nothing", out)
	}
	if want := "ratekit: bench: cannot reach Redis at " + addr + ": "; strings.Count(errOut, "\n") != 1 || !strings.HasPrefix(errOut, want) {
		t.Errorf("stderr = %q, want one line starting with %q", errOut, want)
	}
}

func TestBenchInterruptedExits130(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Ctrl-C before the run even starts: it stops at once and prints what it has
	var out, errOut strings.Builder
	code := run(ctx, []string{"bench", "--duration", "1h", "--goroutines", "2"}, &out, &errOut)
	if code != exitInterrupted {
		t.Errorf("exit %d, want %d (stderr %q)", code, exitInterrupted, errOut.String())
	}
	if !strings.Contains(out.String(), "(interrupted)") {
		t.Errorf("summary does not say it was interrupted:\n%s", out.String())
	}
}

func TestProgressBar(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	p := &progressBar{w: &b, total: 10e9}
	p.draw(4e9, 123456)
	p.draw(10e9, 7)
	p.clear()
	want := "\r[############                  ] 4.0s/10s  123456 decisions" +
		"\r[##############################] 10.0s/10s  7 decisions    " + // 4 spaces erase the longer line
		"\r" + strings.Repeat(" ", 55) + "\r"
	if got := b.String(); got != want {
		t.Errorf("progress bar wrote\n%q\nwant\n%q", got, want)
	}
	if isTerminal(&b) {
		t.Error("a strings.Builder is a terminal")
	}
}
