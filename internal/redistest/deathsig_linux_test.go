package redistest_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ratekit/limiter/internal/childproc"
	"github.com/ratekit/limiter/internal/redistest"
)

const childEnv = "REDISTEST_DEATHSIG_CHILD"

// TestServerDiesWithTheTestBinary: a test binary killed outright (a timeout, a signal)
// runs no cleanup; the redis-server it started must not outlive it. The child starts a
// server, prints its process id and waits; the test kills the child and waits for the
// server to be gone (or a zombie: the kernel killed it and nobody reaped it yet).
func TestServerDiesWithTheTestBinary(t *testing.T) {
	if os.Getenv(childEnv) == "1" {
		s := redistest.Start(t)
		info, err := s.Client(t).Info(context.Background(), "server").Result()
		if err != nil {
			t.Fatal(err)
		}
		for line := range strings.Lines(info) {
			if v, ok := strings.CutPrefix(line, "process_id:"); ok {
				fmt.Println(strings.TrimSpace(v))
			}
		}
		var b [1]byte
		_, _ = os.Stdin.Read(b[:]) // until the parent kills this process
		return
	}
	t.Parallel()
	redistest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := childproc.Start(ctx, t, "TestServerDiesWithTheTestBinary", childEnv+"=1")
	if !c.Lines.Scan() {
		t.Fatalf("the child printed no process id: %v", c.Lines.Err())
	}
	pid, err := strconv.Atoi(c.Lines.Text())
	if err != nil {
		t.Fatalf("the child printed %q: %v", c.Lines.Text(), err)
	}
	if err := c.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.Cmd.Wait()
	for !gone(pid) {
		if ctx.Err() != nil {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("redis-server %d outlived the test binary that started it", pid)
		}
		time.Sleep(10 * time.Millisecond) // waiting on another process: nothing to block on
	}
}

// gone reports whether process pid has exited: it does not exist, or is a zombie.
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name in parentheses, which may hold spaces.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}
