package main

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sync"
	"syscall"
	"testing"
	"time"

	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ratekit/limiter/internal/redistest"
)

// asCommandEnv makes the test binary run ratekitd's main with its arguments: the tests
// below start it as a real OS process without a separate go build.
const asCommandEnv = "RATEKITD_TEST_AS_COMMAND"

func TestMain(m *testing.M) {
	if os.Getenv(asCommandEnv) == "1" {
		main() // os.Args[1:] are ratekitd's flags; main exits 1 on error
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// servingLine is ratekitd's first log line; its addresses are the ports the OS chose.
var servingLine = regexp.MustCompile(`ratekitd serving"? grpc=(\S+) http=(\S+)`)

// process is one ratekitd OS process on loopback ports of its own.
type process struct {
	cmd                *exec.Cmd
	grpcAddr, httpAddr string
	client             rlsv3.RateLimitServiceClient
	log                *syncBuffer
	exited             chan error // the result of cmd.Wait
}

// startProcess runs ratekitd as a child process and returns once its /healthcheck
// answers 200. t.Cleanup sends SIGTERM and waits for the exit (killing it if the drain
// hangs, so a broken child cannot outlive the test).
func startProcess(t *testing.T, args ...string) *process {
	t.Helper()
	args = append([]string{"--grpc-addr", "127.0.0.1:0", "--http-addr", "127.0.0.1:0", "--reload-interval", "0"}, args...)
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), asCommandEnv+"=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &process{cmd: cmd, log: &syncBuffer{}, exited: make(chan error, 1)}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addrs := make(chan []string, 1)
	copied := make(chan struct{})
	go func() { // copy the log, handing over the addresses once they show
		defer close(copied)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			p.log.Write(append(sc.Bytes(), '\n'))
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case addrs <- m[1:]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stderr)
	}()
	go func() { <-copied; p.exited <- cmd.Wait() }() // Wait only after the pipe is drained
	t.Cleanup(func() { p.stop(t) })

	// Bounded waits: a child that never gets ready fails the test instead of hanging it.
	deadline := time.After(2 * time.Minute)
	select {
	case a := <-addrs:
		p.grpcAddr, p.httpAddr = a[0], a[1]
	case err := <-p.exited:
		p.exited <- err
		t.Fatalf("ratekitd exited before serving: %v\n%s", err, p.log)
	case <-deadline:
		t.Fatalf("ratekitd did not log its addresses in time\n%s", p.log)
	}
	for !p.healthy() {
		select {
		case err := <-p.exited:
			p.exited <- err
			t.Fatalf("ratekitd exited before it was healthy: %v\n%s", err, p.log)
		case <-deadline:
			t.Fatalf("ratekitd's /healthcheck never answered 200\n%s", p.log)
		case <-time.After(20 * time.Millisecond): // poll interval, not a synchronisation
		}
	}
	conn, err := grpc.NewClient(p.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	p.client = rlsv3.NewRateLimitServiceClient(conn)
	return p
}

func (p *process) healthy() bool {
	resp, err := http.Get("http://" + p.httpAddr + "/healthcheck")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// stop sends SIGTERM to the process by its PID and waits for it; it must drain and exit 0.
func (p *process) stop(t *testing.T) {
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("SIGTERM to %d: %v", p.cmd.Process.Pid, err)
	}
	select {
	case err := <-p.exited:
		p.exited <- err
		if err != nil {
			t.Errorf("ratekitd (pid %d) after SIGTERM: %v\n%s", p.cmd.Process.Pid, err, p.log)
		}
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		p.exited <- <-p.exited
		t.Errorf("ratekitd (pid %d) did not exit within a minute of SIGTERM; killed\n%s", p.cmd.Process.Pid, p.log)
	}
}

// ask sends one descriptor through the process's gRPC port, like Envoy does.
func (p *process) ask(t *testing.T, kv ...string) rlsv3.RateLimitResponse_Code {
	t.Helper()
	return askClient(t, p.client, kv...)
}

// TestTwoRatekitdProcessesOnOneRedis is issue 25's "two ratekitd processes on one Redis
// enforce one limit together" with real processes: the examples allow 5 marketing
// messages a day per number, and two processes sharing one Redis allow 5 in all, first in
// turns, then under concurrent calls to both.
func TestTwoRatekitdProcessesOnOneRedis(t *testing.T) {
	t.Parallel()
	url := "redis://" + redistest.Start(t).Addr()
	a := startProcess(t, "--config", "../../examples", "--redis", url)
	b := startProcess(t, "--config", "../../examples", "--redis", url, "--denial-cache")
	if a.cmd.Process.Pid == b.cmd.Process.Pid || a.grpcAddr == b.grpcAddr {
		t.Fatalf("not two processes: %d %s, %d %s", a.cmd.Process.Pid, a.grpcAddr, b.cmd.Process.Pid, b.grpcAddr)
	}
	procs := []*process{a, b}

	// In turns: the limit is a sliding log (no window boundary a slow run could cross), so
	// the first 5 are OK and every later one OVER_LIMIT, whichever process answers.
	for i := range 12 {
		got := procs[i%2].ask(t, "message_type", "marketing", "to_number", "206")
		want := rlsv3.RateLimitResponse_OK
		if i >= 5 {
			want = rlsv3.RateLimitResponse_OVER_LIMIT
		}
		if got != want {
			t.Fatalf("call %d (process %d): %v, want %v", i+1, i%2, got, want)
		}
	}

	// At once: 20 calls race on another number through both processes; exactly 5 pass.
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		oks int
	)
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := procs[i%2].client.ShouldRateLimit(context.Background(), request("message_type", "marketing", "to_number", "207"))
			if err != nil {
				t.Error(err)
				return
			}
			if r.OverallCode == rlsv3.RateLimitResponse_OK {
				mu.Lock()
				oks++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if oks != 5 {
		t.Fatalf("two processes allowed %d of 20 concurrent marketing messages, want 5 together", oks)
	}
}
