package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// write writes files (path relative to dir: content) under dir.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

// TestAPILines: one line per exported name, with its declaration; unexported names,
// tests, internal and main packages have none; a nested module's packages are named by
// its own module path.
func TestAPILines(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"go.mod": "module example.com/m\n",
		"a.go": `package m

import "context"

const (
	A Kind = iota
	B
	c
)

const Untyped = 3

var ErrX = errNew("x")

type Kind int

type S struct {
	Exported int
	hidden   string
	context.Context
}

type I interface {
	Do(ctx context.Context, n int64) (bool, error)
	private()
}

type Alias = S

type G[T any] struct{ V T }

func F(s string, opts ...int) (*S, error) { return nil, nil }
func (s *S) M() int                    { return 0 }
func (g G[T]) Get() T                  { return g.V }
func (k Kind) String() string          { return "" }
func f()                               {}
func errNew(string) error              { return nil }
`,
		"a_test.go":         "package m\n\nfunc TestOnly() {}\n",
		"internal/x/x.go":   "package x\n\nfunc Hidden() {}\n",
		"cmd/tool/main.go":  "package main\n\nfunc Exported() {}\n",
		"nested/go.mod":     "module example.com/m/nested\n",
		"nested/sub/sub.go": "package sub\n\nfunc N() {}\n",
	})
	lines, err := API(dir)
	require.NoError(t, err)
	assert.Equal(t, []string{
		"example.com/m/nested/sub: func N()",
		"example.com/m: const A Kind",
		"example.com/m: const B Kind",
		"example.com/m: const Untyped",
		"example.com/m: embed S context.Context",
		"example.com/m: field G.V T",
		"example.com/m: field S.Exported int",
		"example.com/m: func F(s string, opts ...int) (*S, error)",
		"example.com/m: method (*S) M() int",
		"example.com/m: method (G[T]) Get() T",
		"example.com/m: method (Kind) String() string",
		"example.com/m: method I.Do(ctx context.Context, n int64) (bool, error)",
		"example.com/m: method I.private (unexported: the interface cannot be implemented outside)",
		"example.com/m: type Alias = S",
		"example.com/m: type G[T any] struct",
		"example.com/m: type I interface",
		"example.com/m: type Kind int",
		"example.com/m: type S struct",
		"example.com/m: var ErrX",
	}, lines)
}

// TestCheck: the latest release (by semantic version, not by name) is the baseline; a
// line gone or changed is broken unless api/except.txt allows it; a new line is not.
func TestCheck(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write(t, dir, map[string]string{
		"api/v0.9.0.txt":  "m: func Old()\n",
		"api/v0.10.0.txt": "m: func Kept()\nm: func Gone()\nm: func Changed(int)\nm: func Allowed()\n",
		"api/except.txt":  "# removed with a migration\nm: func Allowed() # use Kept\n",
	})
	release, broken, err := Check(dir, []string{"m: func Kept()", "m: func Changed(int64)", "m: func New()"})
	require.NoError(t, err)
	assert.Equal(t, "v0.10.0", release)
	assert.Equal(t, []string{"m: func Gone()", "m: func Changed(int)"}, broken)

	release, broken, err = Check(t.TempDir(), []string{"m: func New()"})
	require.NoError(t, err)
	assert.Empty(t, release, "no release recorded")
	assert.Empty(t, broken)
}

// TestRepositoryCompatible is the check make test runs: the repository's API keeps every
// line of its latest release, but those api/except.txt lists with their migration.
func TestRepositoryCompatible(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	lines, err := API(root)
	require.NoError(t, err)
	require.NotEmpty(t, lines)
	release, broken, err := Check(root, lines)
	require.NoError(t, err)
	if release == "" {
		t.Logf("no release recorded in api/ yet (%d API lines today)", len(lines))
		return
	}
	assert.Empty(t, broken, "incompatible changes since %s: record each in api/except.txt with its migration:\n%s",
		release, strings.Join(broken, "\n"))
}
