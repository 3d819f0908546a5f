package childproc

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"testing"
)

// Child is a running helper process: its standard input, and a scanner over the lines it
// writes to standard output (standard error goes to the test's).
type Child struct {
	Cmd   *exec.Cmd
	In    io.WriteCloser
	Lines *bufio.Scanner
}

// Start runs the test binary with -test.run=^test$ and env added to the environment. The
// process is killed when ctx ends (so a hung child cannot hold its reader for good) and,
// at the latest, when t ends.
func Start(ctx context.Context, t testing.TB, test string, env ...string) Child {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return Child{Cmd: cmd, In: in, Lines: bufio.NewScanner(out)}
}
