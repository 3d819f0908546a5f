package limiter_test

import (
	"context"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
)

// TestErrorHomes checks that the Limiter's errors are the values of the packages that
// define them, so errors.Is matches them there.
func TestErrorHomes(t *testing.T) {
	t.Parallel()
	l, _ := newTest(t, algo.TokenBucket{Rate: 1, Burst: 1})
	if _, err := l.Allow(context.Background(), ""); !errors.Is(err, store.ErrInvalidKey) {
		t.Errorf("Allow with an empty key: %v, want one wrapping store.ErrInvalidKey", err)
	}
	if _, err := l.AllowN(context.Background(), "k", 0); !errors.Is(err, algo.ErrInvalidRequest) {
		t.Errorf("AllowN(0): %v, want one wrapping algo.ErrInvalidRequest", err)
	}
	if _, err := limiter.New(nil, algo.TokenBucket{Rate: 1, Burst: 1}); !errors.Is(err, algo.ErrInvalidConfig) {
		t.Errorf("New(nil store): %v, want one wrapping algo.ErrInvalidConfig", err)
	}
}

// TestEachSentinelDefinedOnce checks that no exported error variable of the core module
// is another public package's sentinel under a second name (var ErrX = pkg.ErrX): each
// error has one home users see. (An internal package's sentinel may be exported once.)
func TestEachSentinelDefinedOnce(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || isModule(path)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !name.IsExported() || !strings.HasPrefix(name.Name, "Err") || i >= len(vs.Values) {
						continue
					}
					sel, ok := vs.Values[i].(*ast.SelectorExpr)
					if !ok {
						continue
					}
					// Exporting an internal package's sentinel gives it its one public name.
					if x, ok := sel.X.(*ast.Ident); ok && strings.Contains(importPath(f, x.Name), "/internal/") {
						continue
					}
					t.Errorf("%s: %s = %s.%s: a second name for another package's sentinel",
						fset.Position(name.Pos()), name.Name, sel.X, sel.Sel.Name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// importPath returns the path f imports under the name pkg, "" if none.
func importPath(f *ast.File, pkg string) string {
	for _, imp := range f.Imports {
		path := strings.Trim(imp.Path.Value, `"`)
		if imp.Name != nil && imp.Name.Name == pkg || imp.Name == nil && filepath.Base(path) == pkg {
			return path
		}
	}
	return ""
}

// isModule reports whether dir holds a nested module of its own.
func isModule(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}

// TestWouldExceedDeadlineIsDeadlineExceeded checks that the error of a wait that cannot end
// before the context's deadline matches both ErrWouldExceedDeadline and
// context.DeadlineExceeded (golang/go#54541), plain and composite.
func TestWouldExceedDeadlineIsDeadlineExceeded(t *testing.T) {
	t.Parallel()
	l, _ := newTest(t, algo.TokenBucket{Rate: 1.0 / 3600, Burst: 1}) // one permit an hour
	allowN(t, l, "k", 1)
	all := mustAll(t, l)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for name, lim := range map[string]*limiter.Limiter{"plain": l, "composite": all} {
		err := lim.Wait(ctx, "k")
		if !errors.Is(err, limiter.ErrWouldExceedDeadline) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s Wait an hour before a deadline in a minute: %v, want one matching ErrWouldExceedDeadline and context.DeadlineExceeded", name, err)
		}
		var te interface{ Timeout() bool }
		if !errors.As(err, &te) || !te.Timeout() {
			t.Errorf("%s: %v has no Timeout() true", name, err)
		}
	}
	if errors.Is(context.DeadlineExceeded, limiter.ErrWouldExceedDeadline) {
		t.Error("context.DeadlineExceeded matches ErrWouldExceedDeadline: the match must go one way only")
	}
}

// TestCircuitOpenText: the error of a call the open breaker skipped matches both
// sentinels and says so once, without a doubled "limiter: " prefix (issue 38).
func TestCircuitOpenText(t *testing.T) {
	t.Parallel()
	l, st, _, clk := newFlaky(t, limiter.WithCircuitBreaker(limiter.CircuitBreaker{
		FailureRate: 1, MinCalls: 1, Window: time.Second, CoolDown: time.Minute}))
	st.down.Store(true)
	_, _ = l.Allow(context.Background(), "k")
	clk.Add(time.Second) // the window ends, judged at the next call: open
	_, err := l.Allow(context.Background(), "k")
	if !errors.Is(err, limiter.ErrCircuitOpen) || !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Allow with the breaker open = %v, want one matching ErrCircuitOpen and store.ErrUnavailable", err)
	}
	if n := strings.Count(err.Error(), "limiter:"); n != 1 {
		t.Errorf("%q says \"limiter:\" %d times, want once", err, n)
	}
}
