package main

import (
	"flag"
	"io"
	"testing"
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
