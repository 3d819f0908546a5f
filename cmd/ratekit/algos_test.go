package main

import (
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/ratekit/limiter/algo"
)

// TestAlgorithmTable: every line of the table has its own name, and with the default flags
// build selects it by that name and returns a valid config of it.
func TestAlgorithmTable(t *testing.T) {
	t.Parallel()
	var f algoFlags
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.register(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, name := range algorithmNames {
		if seen[name] {
			t.Errorf("two lines of the table are called %q", name)
		}
		seen[name] = true
		a, err := f.build(name)
		if err != nil {
			t.Errorf("build(%q) with the default flags: %v", name, err)
			continue
		}
		if a.Name() != name {
			t.Errorf("build(%q) returned %v, called %q", name, a, a.Name())
		}
	}
	if len(seen) != len(algorithms) {
		t.Errorf("%d names for %d lines", len(seen), len(algorithms))
	}
	if _, err := f.build("no-such-algorithm"); err == nil {
		t.Error("build of an unknown name: no error")
	}
}

// TestQuotaFlag: --quota makes every algorithm that algo.FromQuota makes from the same
// quota, and the smooth-warmup one at its rate; the help no longer offers a 0 that the
// library refuses.
func TestQuotaFlag(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"100/min", "7 per 10s", "100-H", "5/250ms"} {
		var f algoFlags
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		f.register(fs)
		if err := fs.Parse([]string{"--quota", s}); err != nil {
			t.Fatal(err)
		}
		q, err := algo.ParseQuota(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range algorithmNames {
			got, err := f.build(name)
			if err != nil {
				t.Errorf("--quota %s --algo %s: %v", s, name, err)
				continue
			}
			if name == "smooth-warmup" {
				if want := float64(q.Limit) / q.Window.Seconds(); got.(algo.SmoothWarmingUp).Rate != want {
					t.Errorf("--quota %s --algo %s: %v, want rate %g", s, name, got, want)
				}
				continue
			}
			want, err := algo.FromQuota(name, q)
			if err != nil || got != want {
				t.Errorf("--quota %s --algo %s: %v; algo.FromQuota: %v, %v", s, name, got, want, err)
			}
		}
	}
	var f algoFlags
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	f.register(fs)
	fs.VisitAll(func(fl *flag.Flag) {
		if strings.Contains(fl.Usage, "0 means") {
			t.Errorf("--%s: %q offers a 0 the library refuses", fl.Name, fl.Usage)
		}
	})
}
