package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// RequireEnv is the environment variable that turns a missing redis-server into a test
// failure instead of a skip.
const RequireEnv = "LIMITER_REQUIRE_REDIS"

// Bounds of the readiness loops. They are generous because the machine running the tests
// may be loaded (-race, other packages in parallel); a healthy server is ready in
// milliseconds, and the loops poll, so the bound only matters when something is broken.
const (
	readyTimeout = 15 * time.Second
	pollInterval = 5 * time.Millisecond
	startTries   = 5 // fresh ports tried when a start fails (a port taken in between)
)

// Require skips the test when redis-server is not on PATH, or fails it when the environment
// variable LIMITER_REQUIRE_REDIS is set. It returns the path of redis-server.
func Require(tb testing.TB) string {
	tb.Helper()
	path, err := exec.LookPath("redis-server")
	if err == nil {
		return path
	}
	msg := "redistest: redis-server not found on PATH: THE REDIS TESTS DID NOT RUN " +
		"(install Redis ≥ 7, or set " + RequireEnv + "=1 to make this a failure)"
	if os.Getenv(RequireEnv) != "" {
		tb.Fatalf("%s: %v", msg, err)
	}
	tb.Skip(msg)
	return ""
}

// Server is one throw-away redis-server process listening on 127.0.0.1. Its methods are
// safe for concurrent use.
type Server struct {
	tb    testing.TB
	bin   string
	dir   string
	port  int
	pre   []string // command-line arguments before the flags (a sentinel's config file)
	extra []string // extra command-line arguments (cluster mode, replicaof)

	mu   sync.Mutex
	proc *process // nil while killed
}

// process is one run of redis-server.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been reaped
}

// Start starts a redis-server on a free loopback port, with no persistence and its own
// temporary directory, and waits until it answers PING. The server is killed by t.Cleanup.
// The test is skipped (or failed, see [Require]) when redis-server is not installed.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := Require(tb)
	s, err := startServer(tb, bin, false)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// StartWithFlags is Start with extra redis-server flags, e.g. "--rename-command", "FCALL",
// "" for a server that behaves, for that command, like an older version.
func StartWithFlags(tb testing.TB, flags ...string) *Server {
	tb.Helper()
	return startWith(tb, Require(tb), nil, flags)
}

// startServer starts a server on a fresh port, trying a few ports in case one is taken by
// another process between the moment it was found free and the moment Redis binds it.
func startServer(tb testing.TB, bin string, cluster bool) (*Server, error) {
	tb.Helper()
	var lastErr error
	for try := 0; try < startTries; try++ {
		port, err := freePort(cluster)
		if err != nil {
			return nil, err
		}
		s := &Server{tb: tb, bin: bin, dir: tb.TempDir(), port: port}
		if cluster {
			s.extra = []string{
				"--cluster-enabled", "yes",
				"--cluster-config-file", filepath.Join(s.dir, "nodes.conf"),
				"--cluster-node-timeout", "5000",
			}
		}
		if lastErr = s.start(); lastErr == nil {
			tb.Cleanup(s.Kill)
			return s, nil
		}
	}
	return nil, fmt.Errorf("redistest: could not start redis-server after %d tries: %w", startTries, lastErr)
}

// Addr returns the server's "127.0.0.1:port" address. It stays the same across Restart.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Port returns the server's TCP port.
func (s *Server) Port() int { return s.port }

// Client returns a client for the server, closed by t.Cleanup. It enables
// ContextTimeoutEnabled so that context deadlines bound every call, as a store's
// per-call timeout expects.
func (s *Server) Client(tb testing.TB) *redis.Client {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), ContextTimeoutEnabled: true})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// Kill stops the server at once (SIGKILL) and waits until the process has exited. Clients
// see their connections drop and new dials refused. Kill on a stopped server does nothing.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
}

func (s *Server) killLocked() {
	if s.proc == nil {
		return
	}
	_ = s.proc.cmd.Process.Kill()
	<-s.proc.done
	s.proc = nil
}

// Restart kills the server (if running) and starts a new process on the same port. The new
// server has an empty dataset and an empty script cache, as after a crash without
// persistence or a failover to a fresh replica. It fails the test if the server does not
// come back, so call it from the test's goroutine.
func (s *Server) Restart() {
	s.tb.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.killLocked()
	// The port was ours a moment ago; Redis binds with SO_REUSEADDR, so TIME_WAIT
	// connections do not block it. Retry a few times in case the kernel is slow to let go.
	var err error
	for try := 0; try < startTries; try++ {
		if err = s.startLocked(); err == nil {
			return
		}
	}
	s.tb.Fatalf("redistest: restart on port %d: %v", s.port, err)
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.startLocked()
}

// startLocked runs redis-server and waits until it answers PING as the process it started.
func (s *Server) startLocked() error {
	args := append(append([]string(nil), s.pre...),
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", s.dir,
		"--daemonize", "no",
	)
	args = append(args, s.extra...)
	var out bytes.Buffer
	cmd := exec.Command(s.bin, args...)
	cmd.SysProcAttr = withParent()
	cmd.Stdout = &syncWriter{w: &out}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redistest: start %s: %w", s.bin, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.done)
	}()
	if err := waitReady(s.Addr(), cmd.Process.Pid, p.done); err != nil {
		_ = cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("%w\nredis-server output:\n%s", err, cmd.Stdout.(*syncWriter).String())
	}
	s.proc = p
	return nil
}

// waitReady polls the server until PING answers and INFO reports the expected process id,
// the process exits, or readyTimeout passes.
func waitReady(addr string, pid int, exited <-chan struct{}) error {
	c := redis.NewClient(&redis.Options{
		Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: time.Second, PoolSize: 1, ContextTimeoutEnabled: true,
	})
	defer c.Close()
	deadline := time.Now().Add(readyTimeout)
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var lastErr error
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		lastErr = c.Ping(ctx).Err()
		if lastErr == nil {
			var info string
			info, lastErr = c.Info(ctx, "server").Result()
			if lastErr == nil {
				cancel()
				if got := infoField(info, "process_id"); got != strconv.Itoa(pid) {
					return fmt.Errorf("redistest: %s is answered by process %s, not by the redis-server we started (%d)", addr, got, pid)
				}
				return nil
			}
		}
		cancel()
		select {
		case <-exited:
			return fmt.Errorf("redistest: redis-server on %s exited before answering: %v", addr, lastErr)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("redistest: redis-server on %s not ready after %v: %v", addr, readyTimeout, lastErr)
		}
	}
}

// infoField returns the value of field in an INFO reply.
func infoField(info, field string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			return v
		}
	}
	return ""
}

// freePort returns a loopback port nobody listens on; for a cluster node, port+10000 (the
// cluster bus) must be free as well.
func freePort(cluster bool) (int, error) {
	for try := 0; try < 50; try++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("redistest: find a free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		if !cluster {
			_ = l.Close()
			return port, nil
		}
		if port+10000 > 65535 {
			_ = l.Close()
			continue
		}
		bus, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port+10000)))
		_ = l.Close()
		if err != nil {
			continue
		}
		_ = bus.Close()
		return port, nil
	}
	return 0, errors.New("redistest: no free port pair for a cluster node")
}

// syncWriter collects a process's output; exec writes from its own goroutine.
type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.String()
}
