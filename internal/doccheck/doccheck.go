// Package doccheck type-checks the Go code blocks of the project's Markdown (README.md and
// docs/*.md) against the module, so that a document cannot name a removed or renamed
// identifier: its test runs in go test ./... (internal/doccheck/doccheck_test.go).
//
// The rules, applied to every block fenced as ```go (fence anything else as ```text, or
// with its own language):
//
//  1. Elision: a line that is only "..." is dropped, and "{ ... }" reads as "{}".
//  2. A block whose first line (after blank and comment lines) is a package clause is a
//     whole file. If it names one of the core module's packages ("package algo") it is
//     checked as one more file of that package, which may use its unexported names;
//     otherwise it is a package of its own.
//  3. Any other block is a fragment. If it starts with an import declaration those are its
//     imports; otherwise its imports are inferred from the package names it uses, by the
//     table Imports (the module's packages, the standard library's that the docs use, and
//     go-redis as redis). A fragment that parses as top-level declarations stays at top
//     level; otherwise it is the body of a function. It is compiled beside the variables
//     of Env (ctx, l, st, client, key, ...): the names the prose around a fragment takes
//     as given.
//  4. Imports the core module cannot resolve — the nested modules (ginlimit, echolimit,
//     fiberlimit, grpclimit, otellimit, rls, bench) and third-party packages outside the
//     core's go.mod — are unknown packages: the type checker accepts whatever a block
//     takes from them, and still checks every name of the core module the block uses.
//     A fragment that uses a nested module, or a package of the frameworks they serve
//     (the table Foreign: grpc, status, gin, ...), is skipped: its free variables (a gin
//     router, a gRPC client) come from frameworks the core module does not have. A whole
//     file (rule 2) that imports them is checked.
//  5. A block preceded by the line "<!-- doccheck: skip REASON -->" is skipped; the test
//     logs the reason. Use it for code about a hypothetical (docs/algorithms.md's
//     DailyQuota in another package's table).
//  6. The check reports every type error but those that elision causes by design:
//     unused variables and imports, and missing return statements.
//
// A doc that uses a package name the tables do not know gets "undefined: name": add the
// name to Imports (or Foreign), or give the block its imports. The packages are read from
// the compiler's export data (one go list -export, answered by the build cache), so the
// test takes a few seconds.
package doccheck

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/scanner"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// Module is the core module's path.
const Module = "github.com/ratekit/limiter"

// Nested lists the nested modules of the repository: their own go.mod, so the core module
// cannot import them.
var Nested = []string{"ginlimit", "echolimit", "fiberlimit", "grpclimit", "otellimit", "rls", "bench"}

// Imports maps a package name a fragment may use to the path it is imported from (rule 3).
var Imports = map[string]string{
	"limiter":     Module,
	"adaptive":    Module + "/adaptive",
	"algo":        Module + "/algo",
	"clockx":      Module + "/clockx",
	"distributed": Module + "/distributed",
	"httplimit":   Module + "/httplimit",
	"leasing":     Module + "/leasing",
	"local":       Module + "/local",
	"semaphore":   Module + "/semaphore",
	"smooth":      Module + "/smooth",
	"store":       Module + "/store",
	"storetest":   Module + "/store/storetest",
	"ginlimit":    Module + "/ginlimit",
	"echolimit":   Module + "/echolimit",
	"fiberlimit":  Module + "/fiberlimit",
	"grpclimit":   Module + "/grpclimit",
	"otellimit":   Module + "/otellimit",
	"redis":       "github.com/redis/go-redis/v9",
	"clock":       "github.com/benbjohnson/clock",
	"context":     "context",
	"errors":      "errors",
	"fmt":         "fmt",
	"http":        "net/http",
	"log":         "log",
	"slog":        "log/slog",
	"os":          "os",
	"strings":     "strings",
	"sync":        "sync",
	"testing":     "testing",
	"time":        "time",
}

// Foreign maps the package names of the frameworks the nested modules serve, which the
// core module does not have, to their paths. A fragment using one is skipped (rule 4).
var Foreign = map[string]string{
	"grpc":       "google.golang.org/grpc",
	"status":     "google.golang.org/grpc/status",
	"codes":      "google.golang.org/grpc/codes",
	"errdetails": "google.golang.org/genproto/googleapis/rpc/errdetails",
	"gin":        "github.com/gin-gonic/gin",
	"echo":       "github.com/labstack/echo/v4",
	"fiber":      "github.com/gofiber/fiber/v2",
	"otel":       "go.opentelemetry.io/otel",
}

// Env is the file every fragment is compiled beside (rule 3): the variables the prose
// around a fragment takes as given. Its names must differ from those of Imports.
const Env = `package doc

import (
	"context"
	"net/http"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/store"
)

var (
	ctx          context.Context  // the caller's context
	l            *limiter.Limiter // a limiter
	localLimiter *limiter.Limiter // a limiter on the local store, for Fallback
	st           store.Store      // a store: local.New() or distributed.New(client)
	client       *redis.Client    // a go-redis client
	redisClient  *redis.Client
	key          string                   // a key
	userOf       func(key string) string  // key functions for limiter.WithKeyFunc
	itemOf       func(key string) string
	obs          limiter.Observer         // an observer
	mux          *http.ServeMux           // an HTTP handler
)
`

// Block is one ```go block of a Markdown file.
type Block struct {
	File string // the Markdown file, as given to Extract
	Line int    // the line of the block's first line of code (1-based)
	Code string
	Skip string // the reason of a "<!-- doccheck: skip REASON -->" marker, if any
}

const skipMarker = "<!-- doccheck: skip"

// Extract returns the ```go blocks of a Markdown file. A fence indented or quoted is found
// as well (its indentation is removed from the code).
func Extract(file string, md []byte) ([]Block, error) {
	var (
		blocks []Block
		cur    *Block
		indent string
		code   strings.Builder
		prev   string
	)
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			if lang := strings.TrimSpace(strings.TrimPrefix(trimmed, "```")); lang == "go" {
				cur = &Block{File: file, Line: n + 1}
				indent = line[:strings.Index(line, "```")]
				if p := strings.TrimSpace(prev); strings.HasPrefix(p, skipMarker) {
					cur.Skip = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(p, skipMarker), "-->"))
					if cur.Skip == "" {
						return nil, fmt.Errorf("%s:%d: a skip marker without its reason", file, n-1)
					}
				}
			} else {
				// another language: skip to its closing fence
				cur = &Block{Line: -1}
				indent = line[:strings.Index(line, "```")]
			}
		case cur != nil && trimmed == "```":
			if cur.Line >= 0 {
				cur.Code = code.String()
				blocks = append(blocks, *cur)
			}
			cur = nil
			code.Reset()
		case cur != nil:
			code.WriteString(strings.TrimPrefix(line, indent))
			code.WriteByte('\n')
		}
		prev = line
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if cur != nil {
		return nil, fmt.Errorf("%s: a code block is not closed", file)
	}
	return blocks, nil
}

// Checker type-checks blocks against the module in Dir. It is not safe for concurrent use.
type Checker struct {
	Dir string // the core module's root directory

	fset    *token.FileSet
	gc      types.ImporterFrom
	export  map[string]string // import path → its export data file, from go list -export
	failed  map[string]string // import path → why go list has no export data for it
	unknown map[string]bool   // paths answered as unknown packages (rule 4)
}

// NewChecker returns a Checker for the module in dir. It imports the compiler's export data
// of the packages (go list -export, which the build cache answers at once after a build),
// and keeps what it imported for the blocks after.
func NewChecker(dir string) *Checker {
	c := &Checker{Dir: dir, fset: token.NewFileSet(), failed: map[string]string{}, unknown: map[string]bool{}}
	c.gc = importer.ForCompiler(c.fset, "gc", c.lookup).(types.ImporterFrom)
	return c
}

// lookup opens the export data of path for the gc importer.
func (c *Checker) lookup(path string) (io.ReadCloser, error) {
	file, ok := c.export[path]
	if !ok {
		return nil, fmt.Errorf("doccheck: no export data for %q", path)
	}
	return os.Open(file)
}

// list runs go list -deps -export on paths and records their export data files. The first
// call lists every core package of Imports (and the standard packages it names) at once.
func (c *Checker) list(paths ...string) error {
	if c.export == nil {
		c.export = map[string]string{}
		for _, p := range Imports {
			if nestedModule(p) == "" {
				paths = append(paths, p)
			}
		}
		sort.Strings(paths)
	}
	// -e: a package that is missing or does not build is listed with its error, and fails
	// only the blocks that import it.
	cmd := exec.Command("go", append([]string{"list", "-e", "-deps", "-export", "-f", "{{.ImportPath}}\t{{.Export}}\t{{with .Error}}{{.Err}}{{end}}"}, paths...)...)
	cmd.Dir = c.Dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return fmt.Errorf("go list %s: %v: %s", strings.Join(paths, " "), err, stderr.Bytes())
	}
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.SplitN(l, "\t", 3); len(f) == 3 {
			if f[1] != "" {
				c.export[f[0]] = f[1]
			} else {
				c.failed[f[0]] = f[2]
			}
		}
	}
	return nil
}

// errUnknown answers an import the core module cannot resolve (rule 4).
var errUnknown = errors.New("doccheck: outside the core module")

// Import imports path for the type checker (rule 4); see ImportFrom.
func (c *Checker) Import(path string) (*types.Package, error) {
	return c.ImportFrom(path, c.Dir, 0)
}

// ImportFrom imports path as the core module in c.Dir resolves it, whatever the block's
// directory, and answers an error that Check ignores for a nested module's package and a
// third-party package the core module does not have (rule 4).
func (c *Checker) ImportFrom(path, _ string, _ types.ImportMode) (*types.Package, error) {
	if path == "unsafe" {
		return types.Unsafe, nil
	}
	if nestedModule(path) != "" {
		c.unknown[path] = true
		return nil, errUnknown
	}
	if _, ok := c.export[path]; !ok {
		if _, failed := c.failed[path]; !failed {
			if err := c.list(path); err != nil {
				return nil, err
			}
		}
	}
	if _, ok := c.export[path]; !ok {
		if thirdParty(path) {
			c.unknown[path] = true
			return nil, errUnknown
		}
		return nil, fmt.Errorf("go list: %s", c.failed[path])
	}
	return c.gc.ImportFrom(path, c.Dir, 0)
}

// nestedModule returns the nested module path belongs to, or "".
func nestedModule(path string) string {
	for _, m := range Nested {
		if p := Module + "/" + m; path == p || strings.HasPrefix(path, p+"/") {
			return m
		}
	}
	return ""
}

// thirdParty reports whether path is neither the standard library's nor the module's.
func thirdParty(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return strings.Contains(first, ".") && path != Module && !strings.HasPrefix(path, Module+"/")
}

// line is one line of the source handed to the type checker, with the line of the
// Markdown file it comes from (0: added by the checker).
type line struct {
	text string
	md   int
}

// Check type-checks b. It returns the reason it skipped b ("" if it did not) and an error
// listing every problem found, each at its line of the Markdown file.
func (c *Checker) Check(b Block) (skipped string, err error) {
	if b.Skip != "" {
		return b.Skip, nil
	}
	var lines []line
	for i, text := range strings.Split(strings.TrimRight(b.Code, "\n"), "\n") {
		switch strings.TrimSpace(text) {
		case "...":
			text = ""
		}
		text = strings.ReplaceAll(text, "{ ... }", "{}")
		lines = append(lines, line{text, b.Line + i})
	}
	if isFile(lines) {
		return "", c.checkFile(b, lines)
	}
	return c.checkFragment(b, lines)
}

// isFile reports whether the first line that is not blank or a comment is a package clause.
func isFile(lines []line) bool {
	for _, l := range lines {
		t := strings.TrimSpace(l.text)
		if t == "" || strings.HasPrefix(t, "//") {
			continue
		}
		return strings.HasPrefix(t, "package ")
	}
	return false
}

func join(lines []line) string {
	var sb strings.Builder
	for _, l := range lines {
		sb.WriteString(l.text)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// checkFile checks a whole file (rule 2).
func (c *Checker) checkFile(b Block, lines []line) error {
	name := fmt.Sprintf("%s:%d.go", b.File, b.Line)
	f, err := parser.ParseFile(c.fset, name, join(lines), parser.ParseComments)
	if err != nil {
		return c.report(b, lines, err)
	}
	files := []*ast.File{f}
	path := "doc/" + f.Name.Name
	if imp, ok := Imports[f.Name.Name]; ok && strings.HasPrefix(imp, Module) && nestedModule(imp) == "" {
		path = imp
		dir := filepath.Join(c.Dir, strings.TrimPrefix(strings.TrimPrefix(imp, Module), "/"))
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			return err
		}
		for _, name := range pkg.GoFiles {
			f, err := parser.ParseFile(c.fset, filepath.Join(dir, name), nil, 0)
			if err != nil {
				return err
			}
			files = append(files, f)
		}
	}
	return c.typeCheck(b, lines, path, files)
}

// checkFragment checks a fragment (rule 3).
func (c *Checker) checkFragment(b Block, lines []line) (string, error) {
	// Its own imports: the import declarations it starts with.
	var imports, body []line
	{
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "", "package doc\n"+join(lines), parser.ImportsOnly)
		if err != nil {
			return "", c.report(b, lines, err)
		}
		n := 0 // the lines of the fragment its imports take
		if len(f.Imports) > 0 {
			n = fset.Position(f.Decls[len(f.Decls)-1].End()).Line - 1
		}
		imports, body = append([]line(nil), lines[:n]...), lines[n:]
	}
	used := usedPackages(join(body))
	for _, name := range used {
		if m := nestedModule(Imports[name]); m != "" {
			return fmt.Sprintf("a fragment using the nested module %s", m), nil
		}
	}
	for _, name := range used {
		if p, ok := Foreign[name]; ok {
			return fmt.Sprintf("a fragment using %s (%s), which the core module does not have", name, p), nil
		}
	}
	if len(imports) == 0 {
		for _, name := range used {
			imports = append(imports, line{fmt.Sprintf("import %q", Imports[name]), 0})
		}
	}
	head := append([]line{{"package doc", 0}}, imports...)
	src := append(append([]line{}, head...), body...)
	if _, err := parser.ParseFile(token.NewFileSet(), "", join(src), 0); err != nil {
		src = append(append(append([]line{}, head...), line{"func _() {", 0}), body...)
		src = append(src, line{"}", 0})
	}
	name := fmt.Sprintf("%s:%d.go", b.File, b.Line)
	f, err := parser.ParseFile(c.fset, name, join(src), 0)
	if err != nil {
		return "", c.report(b, src, err)
	}
	env, err := parser.ParseFile(c.fset, "env.go", Env, 0)
	if err != nil {
		return "", err
	}
	return "", c.typeCheck(b, src, "doc", []*ast.File{f, env})
}

// usedPackages returns the names of Imports that src uses as X in X.Y, sorted.
func usedPackages(src string) []string {
	var s scanner.Scanner
	fset := token.NewFileSet()
	s.Init(fset.AddFile("", -1, len(src)), []byte(src), nil, 0)
	seen := map[string]bool{}
	prevIdent, prevPeriod := "", false
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.PERIOD && prevIdent != "" && !prevPeriod {
			_, known := Imports[prevIdent]
			if _, foreign := Foreign[prevIdent]; known || foreign {
				seen[prevIdent] = true
			}
		}
		// An identifier after a period is a selector, not a package name.
		prevPeriod = tok == token.PERIOD
		if tok == token.IDENT {
			prevIdent = lit
		} else if tok != token.PERIOD {
			prevIdent = ""
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// typeCheck checks files as the package path and reports the errors that count (rule 6).
func (c *Checker) typeCheck(b Block, lines []line, path string, files []*ast.File) error {
	var errs []error
	conf := types.Config{
		Importer: c,
		Error: func(err error) {
			te, ok := err.(types.Error)
			if !ok {
				errs = append(errs, err)
				return
			}
			if te.Soft && (strings.Contains(te.Msg, "declared and not used") || strings.Contains(te.Msg, "imported and not used")) {
				return
			}
			if strings.HasPrefix(te.Msg, "missing return") {
				return
			}
			if p, ok := strings.CutPrefix(te.Msg, "could not import "); ok {
				p, _, _ = strings.Cut(p, " ")
				if c.unknown[p] {
					return
				}
			}
			errs = append(errs, err)
		},
	}
	_, _ = conf.Check(path, c.fset, files, nil)
	if len(errs) == 0 {
		return nil
	}
	return c.report(b, lines, errors.Join(errs...))
}

// report rewrites the positions of err (a types.Error, a scanner.ErrorList, or several
// joined) as lines of the Markdown file.
func (c *Checker) report(b Block, lines []line, err error) error {
	var msgs []string
	var add func(err error)
	add = func(err error) {
		var list scanner.ErrorList
		switch e := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range e.Unwrap() {
				add(e)
			}
			return
		case types.Error:
			msgs = append(msgs, c.where(b, lines, e.Fset.Position(e.Pos))+": "+e.Msg)
			return
		case scanner.ErrorList:
			list = e
		case *scanner.Error:
			list = scanner.ErrorList{e}
		default:
			msgs = append(msgs, fmt.Sprintf("%s:%d: %v", b.File, b.Line, err))
			return
		}
		for _, e := range list {
			msgs = append(msgs, c.where(b, lines, e.Pos)+": "+e.Msg)
		}
	}
	add(err)
	return errors.New(strings.Join(msgs, "\n"))
}

// where names a position of the checked source as a line of the Markdown file.
func (c *Checker) where(b Block, lines []line, p token.Position) string {
	if !strings.HasPrefix(p.Filename, b.File+":") {
		return p.String() // a file of the package the block joins
	}
	if i := p.Line - 1; i >= 0 && i < len(lines) && lines[i].md > 0 {
		return fmt.Sprintf("%s:%d", b.File, lines[i].md)
	}
	return fmt.Sprintf("%s:%d (the code the checker added around the block)", b.File, b.Line)
}
