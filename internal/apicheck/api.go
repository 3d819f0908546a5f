package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// API returns the API lines of every public package of the modules under root, sorted.
func API(root string) ([]string, error) {
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if p != root && (name == "internal" || name == "testdata" || name == "vendor" ||
			strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		imp, ok, err := importPath(root, p)
		if err != nil || !ok {
			return err
		}
		pl, err := packageLines(p, imp)
		lines = append(lines, pl...)
		return err
	})
	return sorted(lines), err
}

// importPath is the import path of the package in dir: the path of the module whose
// go.mod is nearest above it (within root), joined with dir's place in that module.
func importPath(root, dir string) (string, bool, error) {
	for d := dir; ; d = filepath.Dir(d) {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil {
			mod := modulePath(b)
			rel, err := filepath.Rel(d, dir)
			if err != nil || mod == "" {
				return "", false, err
			}
			return path.Join(mod, filepath.ToSlash(rel)), true, nil
		}
		if !os.IsNotExist(err) {
			return "", false, err
		}
		if rel, err := filepath.Rel(root, d); err != nil || rel == "." || strings.HasPrefix(rel, "..") {
			return "", false, err
		}
	}
}

// modulePath reads the module line of a go.mod file.
func modulePath(gomod []byte) string {
	for _, l := range strings.Split(string(gomod), "\n") {
		if m, ok := strings.CutPrefix(strings.TrimSpace(l), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`)
		}
	}
	return ""
}

// packageLines returns the API lines of the package in dir (none for a main package or a
// folder without Go files), each starting with imp.
func packageLines(dir, imp string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	var lines []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		if f.Name.Name == "main" {
			return nil, nil
		}
		w := writer{fset: fset, prefix: imp + ": "}
		for _, decl := range f.Decls {
			w.decl(decl)
		}
		lines = append(lines, w.lines...)
	}
	return lines, nil
}

// writer turns declarations into API lines.
type writer struct {
	fset   *token.FileSet
	prefix string
	lines  []string
}

func (w *writer) add(parts ...string) {
	w.lines = append(w.lines, w.prefix+strings.Join(parts, " "))
}

// expr prints e on one line.
func (w *writer) expr(e ast.Node) string {
	var buf bytes.Buffer
	_ = printer.Fprint(&buf, w.fset, e)
	return strings.Join(strings.Fields(buf.String()), " ")
}

func (w *writer) decl(d ast.Decl) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		w.funcDecl(d)
	case *ast.GenDecl:
		var typ ast.Expr // a const group's type carries to the specs after it
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				w.typeSpec(s)
			case *ast.ValueSpec:
				if d.Tok == token.CONST && (s.Type != nil || len(s.Values) > 0) {
					typ = s.Type
				}
				if d.Tok == token.VAR {
					typ = s.Type
				}
				for _, n := range s.Names {
					if !n.IsExported() {
						continue
					}
					kind := strings.ToLower(d.Tok.String())
					if typ != nil {
						w.add(kind, n.Name, w.expr(typ))
					} else {
						w.add(kind, n.Name)
					}
				}
			}
		}
	}
}

func (w *writer) funcDecl(d *ast.FuncDecl) {
	if !d.Name.IsExported() {
		return
	}
	sig := strings.TrimPrefix(w.expr(d.Type), "func")
	if d.Recv == nil {
		w.add("func", d.Name.Name+sig)
		return
	}
	recv := d.Recv.List[0].Type
	base := recv
	if s, ok := base.(*ast.StarExpr); ok {
		base = s.X
	}
	switch b := base.(type) {
	case *ast.IndexExpr:
		base = b.X
	case *ast.IndexListExpr:
		base = b.X
	}
	if id, ok := base.(*ast.Ident); !ok || !id.IsExported() {
		return
	}
	w.add("method", "("+w.expr(recv)+")", d.Name.Name+sig)
}

func (w *writer) typeSpec(s *ast.TypeSpec) {
	if !s.Name.IsExported() {
		return
	}
	name := s.Name.Name
	if s.TypeParams != nil {
		var params []string
		for _, f := range s.TypeParams.List {
			var names []string
			for _, n := range f.Names {
				names = append(names, n.Name)
			}
			params = append(params, strings.Join(names, ", ")+" "+w.expr(f.Type))
		}
		name += "[" + strings.Join(params, ", ") + "]"
	}
	switch t := s.Type.(type) {
	case *ast.StructType:
		w.add("type", name, "struct")
		for _, f := range t.Fields.List {
			if len(f.Names) == 0 {
				w.add("embed", s.Name.Name, w.expr(f.Type))
			}
			for _, n := range f.Names {
				if n.IsExported() {
					w.add("field", s.Name.Name+"."+n.Name, w.expr(f.Type))
				}
			}
		}
	case *ast.InterfaceType:
		w.add("type", name, "interface")
		for _, m := range t.Methods.List {
			if len(m.Names) == 0 {
				w.add("embed", s.Name.Name, w.expr(m.Type))
			}
			for _, n := range m.Names {
				if n.IsExported() {
					w.add("method", s.Name.Name+"."+n.Name+strings.TrimPrefix(w.expr(m.Type), "func"))
				} else {
					w.add("method", s.Name.Name+"."+n.Name, "(unexported: the interface cannot be implemented outside)")
				}
			}
		}
	default:
		if s.Assign.IsValid() {
			w.add("type", name, "=", w.expr(s.Type))
		} else {
			w.add("type", name, w.expr(s.Type))
		}
	}
}
