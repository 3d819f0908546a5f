package doccheck

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// root is the core module's root, two directories up.
var root = filepath.Join("..", "..")

// checker is the one Checker of the tests, so that go list runs once. A Checker is not
// safe for concurrent use: the tests of this package do not run in parallel.
var checker = sync.OnceValue(func() *Checker { return NewChecker(root) })

// markdown returns README.md and docs/*.md, relative to root.
func markdown(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	for i, f := range files {
		files[i], _ = filepath.Rel(root, f)
	}
	return files
}

// TestDocs type-checks every ```go block of README.md and docs/*.md (see the package doc
// for the rules) and logs the blocks it skipped, with the reason.
func TestDocs(t *testing.T) {
	c := checker()
	checked := 0
	for _, f := range markdown(t) {
		md, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := Extract(f, md)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			skipped, err := c.Check(b)
			switch {
			case err != nil:
				t.Errorf("the block at %s:%d does not compile:\n%v", b.File, b.Line, err)
			case skipped != "":
				t.Logf("skipped %s:%d: %s", b.File, b.Line, skipped)
			default:
				checked++
			}
		}
	}
	t.Logf("%d blocks checked", checked)
	if checked == 0 {
		t.Fatal("no block checked")
	}
}

// check runs the one block of Markdown md through c.
func check(t *testing.T, c *Checker, md string) (skipped string, err error) {
	t.Helper()
	blocks, err := Extract("test.md", []byte(md))
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 1 {
		t.Fatalf("Extract found %d blocks, want 1", len(blocks))
	}
	return c.Check(blocks[0])
}

const fence = "```"

// goBlock fences code as a ```go block.
func goBlock(code string) string { return fence + "go\n" + code + fence + "\n" }

// TestMissingIdentifierFails proves the check can fail: blocks naming identifiers the
// module does not have (names this project removed) fail, at their line of the Markdown.
func TestMissingIdentifierFails(t *testing.T) {
	c := checker()
	for name, tc := range map[string]struct{ md, want string }{
		"fragment": {
			md:   "intro\n\n" + goBlock("d, err := l.Allow(ctx, key)\nif errors.Is(err, smooth.ErrWaitTooLong) {\n}\n"),
			want: "test.md:5: undefined: smooth.ErrWaitTooLong",
		},
		"method": {
			md:   goBlock("fields := st.ApplyFields(ctx)\n"),
			want: "test.md:2: st.ApplyFields undefined",
		},
		"declarations": {
			md:   goBlock("type O interface {\n\tDecided(ctx context.Context, e limiter.NoSuchEvent)\n}\n"),
			want: "test.md:3: undefined: limiter.NoSuchEvent",
		},
		"missing import": { // observability.md's Prometheus setup named store and algo without importing them
			md:   goBlock("package main\n\nimport \"github.com/ratekit/limiter\"\n\nfunc setup(st store.Store) (*limiter.Limiter, error) {\n\treturn limiter.New(st, algo.GCRA{Rate: 1, Burst: 1})\n}\n"),
			want: "test.md:6: undefined: store",
		},
		"file of a module package": {
			md:   goBlock("package algo\n\nvar _ = NoSuchHelper(1)\n"),
			want: "test.md:4: undefined: NoSuchHelper",
		},
		"nested module's core names": { // an unknown package goes unchecked, the core's names do not
			md:   goBlock("package main\n\nimport (\n\t\"github.com/ratekit/limiter/otellimit\"\n\t\"github.com/ratekit/limiter\"\n)\n\nvar o, _ = otellimit.New(\"api\")\nvar _ = limiter.WithObserverr(o)\n"),
			want: "test.md:10: undefined: limiter.WithObserverr",
		},
	} {
		t.Run(name, func(t *testing.T) {
			skipped, err := check(t, c, tc.md)
			if skipped != "" {
				t.Fatalf("skipped: %s", skipped)
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestRules checks what the rules accept: elision, inferred imports, unused variables,
// top-level declarations, unknown packages, and what they skip.
func TestRules(t *testing.T) {
	c := checker()
	for name, tc := range map[string]struct{ md, skip string }{
		"elision and inference": {md: goBlock("s, err := local.New()\nif err != nil { ... }\n...\nd, err := l.Allow(ctx, \"k\")\nfmt.Println(d.Allowed, time.Second)\n")},
		"declarations":          {md: goBlock("type Observer interface {\n\tDecided(ctx context.Context, e limiter.Event)\n}\n")},
		"own imports":           {md: goBlock("import (\n\tlim \"github.com/ratekit/limiter\"\n)\n\nvar _ lim.Option\n")},
		"unknown packages":      {md: goBlock("package main\n\nimport x \"example.com/not/in/go.mod\"\n\nvar _ = x.Anything(1)\n")},
		"missing return":        {md: goBlock("package main\n\nfunc f() int { /* elided */ }\n")},
		"nested module fragment": {
			md:   goBlock("mw, err := ginlimit.Middleware(l, key)\nrouter.Use(mw)\n"),
			skip: "nested module ginlimit",
		},
		"marker": {
			md:   "<!-- doccheck: skip names a hypothetical -->\n" + goBlock("var _ = algo.DailyQuota{}\n"),
			skip: "names a hypothetical",
		},
		"other languages": {
			md: fence + "text\nnot go\n" + fence + "\n" + goBlock("var _ = algo.GCRA{}\n") + fence + "sh\nmake test\n" + fence + "\n",
		},
	} {
		t.Run(name, func(t *testing.T) {
			skipped, err := check(t, c, tc.md)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(skipped, tc.skip) || (tc.skip == "") != (skipped == "") {
				t.Fatalf("skipped = %q, want %q", skipped, tc.skip)
			}
		})
	}
}

// TestMissingPackageFails: a block importing a package the module does not have fails, and
// the others still pass.
func TestMissingPackageFails(t *testing.T) {
	c := checker()
	_, err := check(t, c, fence+"go\npackage main\n\nimport \"github.com/ratekit/limiter/nosuchpackage\"\n\nvar _ = nosuchpackage.X\n"+fence+"\n")
	if err == nil || !strings.Contains(err.Error(), "test.md:4: could not import github.com/ratekit/limiter/nosuchpackage") {
		t.Fatalf("Check = %v, want an error naming the missing package at test.md:4", err)
	}
	if _, err := check(t, c, fence+"go\nvar _ = algo.GCRA{}\n"+fence+"\n"); err != nil {
		t.Fatalf("after a missing package, a good block: %v", err)
	}
}
