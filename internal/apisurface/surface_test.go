// Package apisurface counts the exported identifiers of the core module, so
// the size of the public API is watched like a benchmark (issue 22).
package apisurface

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// limit is the most exported identifiers the core module may have, the methods of
// exported interfaces included (issue 34 aims at 340; it was 340 without them, 367 with
// them when they began to count, 363 once local.Store.ApplyFields, TokenBucket.ApplyTo and
// TokenBucketState went, 364 with clockx.From, which issue 38 asked for, 367 with
// Limiter.Charge, algo.Chargeable and OutcomeCharged, which issue 36 asked for, 368 with
// Limiter.String, which issue 38 asked for, 369 with httplimit.WithChargeAfter, which
// issue 36 asked for). Lower it whenever
// the count falls; never raise it without a reason in the CHANGELOG.
const limit = 369

// docLimit is the most lines `go doc -all .` may print for the root package (issue 22
// aims at 400).
const docLimit = 400

// moduleRoot is the core module's directory, relative to this package.
const moduleRoot = "../.."

// TestExportedIdentifiers counts exported functions, methods on exported
// types (the methods of exported interfaces included), types, constants and
// variables in the non-test files of every
// non-internal, non-main package of the core module (nested modules, which
// have their own go.mod, and testdata are skipped). Run with -v for the
// per-package counts.
func TestExportedIdentifiers(t *testing.T) {
	counts, err := countModule(moduleRoot)
	if err != nil {
		t.Fatal(err)
	}
	pkgs := make([]string, 0, len(counts))
	total := 0
	for p, n := range counts {
		pkgs = append(pkgs, p)
		total += n
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		t.Logf("%-20s %4d", p, counts[p])
	}
	t.Logf("%-20s %4d (limit %d)", "total", total, limit)
	if total > limit {
		t.Errorf("the core module exports %d identifiers, more than the limit %d", total, limit)
	}
}

// TestRootDocLines keeps `go doc -all .` of the root package short.
func TestRootDocLines(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not available")
	}
	cmd := exec.Command(goTool, "doc", "-all", ".")
	cmd.Dir = moduleRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go doc -all .: %v", err)
	}
	lines := strings.Count(string(out), "\n")
	t.Logf("go doc -all . prints %d lines (limit %d)", lines, docLimit)
	if lines > docLimit {
		t.Errorf("go doc -all . prints %d lines, more than the limit %d", lines, docLimit)
	}
}

// countModule returns the exported identifiers per package directory
// (relative to root, "." for the root package).
func countModule(root string) (map[string]int, error) {
	counts := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		if rel != "." {
			name := d.Name()
			if name == "internal" || name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a nested module
			}
		}
		n, isLib, err := countDir(path)
		if err != nil {
			return err
		}
		if isLib {
			counts[filepath.ToSlash(rel)] = n
		}
		return nil
	})
	return counts, err
}

// countDir counts the exported identifiers of the package in dir; isLib is
// false when dir holds no Go package or a main package.
func countDir(dir string) (n int, isLib bool, err error) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, false, err
	}
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			return 0, false, err
		}
		if f.Name.Name == "main" {
			return 0, false, nil
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return 0, false, nil
	}
	// Deduplicate across build-tagged twins (clock_linux_amd64.go and
	// clock_other.go may declare one name each).
	seen := map[string]bool{}
	add := func(key string) {
		if !seen[key] {
			seen[key] = true
			n++
		}
	}
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					add("func " + d.Name.Name)
					continue
				}
				if recv := receiverType(d.Recv.List[0].Type); ast.IsExported(recv) {
					add("method " + recv + "." + d.Name.Name)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						add("type " + s.Name.Name)
						// An exported interface's methods are API a user calls or
						// implements: each counts, as a method of an exported type does.
						// Embedded interfaces are counted where they are declared.
						if it, ok := s.Type.(*ast.InterfaceType); ok {
							for _, m := range it.Methods.List {
								for _, id := range m.Names {
									if id.IsExported() {
										add("method " + s.Name.Name + "." + id.Name)
									}
								}
							}
						}
					case *ast.ValueSpec:
						for _, id := range s.Names {
							if id.IsExported() {
								add("value " + id.Name)
							}
						}
					}
				}
			}
		}
	}
	return n, true, nil
}

// receiverType names a method's receiver type, without pointer or type
// parameters.
func receiverType(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.ParenExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}
