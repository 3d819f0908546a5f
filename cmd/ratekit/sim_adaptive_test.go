package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestIsAdaptiveSim(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]bool{
		"--algo adaptive-aimd":           true,
		"-algo=adaptive-gradient":        true,
		"--capacity 5 --algo adaptive-x": true, // refused later, by name
		"--algo token-bucket":            false,
		"--compare gcra,token-bucket":    false,
		"adaptive-aimd":                  false,
		"":                               false,
	} {
		if got := isAdaptiveSim(strings.Fields(args)); got != want {
			t.Errorf("isAdaptiveSim(%q) = %v, want %v", args, got, want)
		}
	}
}

func TestSimAdaptiveTable(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"sim", "--algo", "adaptive-aimd", "--capacity", "10", "--latency", "100ms",
		"--duration", "3s"}, &out, &errOut)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	want := `aimd(limit 20 in [1, 1000], +1 per round trip, ×0.9 on drop, timeout 120ms)
server of 10 workers, 100ms per request, offered 3× what it serves (300/s), for 3s
    time  offered admitted     shed    limit in-flight capacity    latency    max lat
`
	if !strings.HasPrefix(out.String(), want) {
		t.Fatalf("output starts\n%s\nwant\n%s", out.String(), want)
	}
	if lines := strings.Count(out.String(), "\n"); lines != 3+3+1 {
		t.Errorf("%d lines, want 7:\n%s", lines, out.String())
	}
}

func TestSimAdaptiveCompareSVG(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "a.svg")
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"sim", "--algo", "adaptive-gradient", "--capacity", "20", "--duration", "4s",
		"--drop-at", "2s", "--compare", "--svg", path}, &out, &errOut)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"fixed 10 (too small)", "fixed 60 (too big)", "capacity 10 from 2s", "wrote " + path} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b, new(struct{})); err != nil {
		t.Fatalf("SVG is not XML: %v", err)
	}
	for _, want := range []string{`data-name="adaptive-gradient"`, `data-name="fixed 60 (too big)"`, `data-name="capacity"`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("SVG lacks %s", want)
		}
	}
}

func TestSimAdaptiveUsageErrors(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"sim", "--algo", "adaptive-nope"},
		{"sim", "--algo", "adaptive-aimd", "--capacity", "0"},
		{"sim", "--algo", "adaptive-aimd", "--latency", "0s"},
		{"sim", "--algo", "adaptive-aimd", "--traffic", "burst"}, // a flag of the rate simulation
		{"sim", "--algo", "adaptive-aimd", "--capacity", "1000000", "--latency", "1ms", "--duration", "1h"},
		{"sim", "--algo", "adaptive-gradient", "--slow-at", "1s", "--slow-to", "10ms"}, // faster than --latency
		{"sim", "--algo", "adaptive-gradient", "--slow-at", "-1s"},
	} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != exitUsage {
			t.Errorf("%v: exit %d (%s), want %d", args, code, errOut.String(), exitUsage)
		}
	}
}

// TestSimAdaptiveSlowdownSVG runs a service-time step: the setting names it, and the chart's
// service-time reference steps up with it.
func TestSimAdaptiveSlowdownSVG(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.svg")
	var out, errOut bytes.Buffer
	code := run(context.Background(), []string{"sim", "--algo", "adaptive-gradient", "--capacity", "20", "--latency", "20ms",
		"--duration", "4s", "--slow-at", "2s", "--svg", path}, &out, &errOut)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if want := "; 60ms per request from 2s\n"; !strings.Contains(out.String(), want) {
		t.Errorf("output lacks %q (--slow-to defaults to 3 × --latency):\n%s", want, out.String())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b, new(struct{})); err != nil {
		t.Fatalf("SVG is not XML: %v", err)
	}
	if !bytes.Contains(b, []byte(`data-name="service time"`)) {
		t.Errorf("SVG lacks the service time")
	}
}
