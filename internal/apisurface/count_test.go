package apisurface

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCountRule checks the counting rule on a package written for it: exported funcs,
// methods on exported types, methods of exported interfaces, types, consts and vars count;
// methods on unexported types or interfaces, unexported names, embedded interfaces and test
// files do not; a main package counts nothing.
func TestCountRule(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.go", `package p

import "fmt"

const A, b = 1, 2 // 1
var C int          // 1
type T struct{}    // 1
type u struct{}
type G[X any] struct{} // 1

func F() {}            // 1
func f() {}
func (T) M()   {}      // 1
func (*T) N()  {}      // 1
func (u) M()   {}
func (T) m()   {}
func (G[X]) M() {}     // 1

type I interface {     // 1
	M()                // 1
	N(int) error       // 1
	m()
	fmt.Stringer
}
type j interface{ M() }
`)
	write("a_test.go", "package p\n\nfunc Exported() {}\n")
	n, isLib, err := countDir(dir)
	if err != nil || !isLib || n != 11 {
		t.Fatalf("countDir = %d, %v, %v; want 11, a library", n, isLib, err)
	}
	write("main.go", "package main\n\nfunc main() {}\n")
	if err := os.Remove(filepath.Join(dir, "a.go")); err != nil {
		t.Fatal(err)
	}
	if n, isLib, err := countDir(dir); err != nil || isLib || n != 0 {
		t.Fatalf("countDir(main) = %d, %v, %v; want 0, not a library", n, isLib, err)
	}
}
