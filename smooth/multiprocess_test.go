package smooth_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/smooth"
	"github.com/ratekit/limiter/store"
)

// TestSmoothMultiProcessPacing runs 3 processes (this test binary, re-executed) whose
// callers acquire one permit at a time, as fast as they are let, from one SmoothBursty(50/s) key of a
// distributed.Store for 2 s of real time, each reservation made atomically in Redis at the
// server's time and slept locally. Together they must be paced as one Guava limiter:
// 100 ± 2 acquires complete within the 2 s, the grants (the instants Redis assigned them)
// are at least stableInterval − 1 ms apart (from the second on, see below), and no process
// wakes before its grant.
//
// This is a measurement of real pacing, so it runs on the real clock. The processes start
// together: each reports that it is ready on stdout, and the parent then sends them all
// the same start instant on stdin.
func TestSmoothMultiProcessPacing(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		multiProcessChild(t)
		return
	}
	if testing.Short() {
		t.Skip("takes 2 s of real time")
	}
	t.Parallel()
	srv := redistest.Start(t)
	key := fmt.Sprintf("multi-%d-%d", os.Getpid(), time.Now().UnixNano())
	const procs, rate, window = 3, 50.0, 2 * time.Second

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type child struct {
		cmd   *exec.Cmd
		in    io.WriteCloser
		lines *bufio.Scanner
	}
	children := make([]child, procs)
	for i := range children {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSmoothMultiProcessPacing$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), childEnv+"=1", "SMOOTH_REDIS="+srv.Addr(), "SMOOTH_KEY="+key,
			"SMOOTH_RATE="+strconv.FormatFloat(rate, 'g', -1, 64), "SMOOTH_WINDOW="+window.String())
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
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		children[i] = child{cmd: cmd, in: in, lines: bufio.NewScanner(out)}
	}
	// Wait for every child to be connected and ready, then start them all at once.
	for i, c := range children {
		if !scanUntil(c.lines, "ready") {
			t.Fatalf("child %d exited before it was ready", i)
		}
	}
	start := time.Now().Add(100 * time.Millisecond)
	for _, c := range children {
		fmt.Fprintln(c.in, start.UnixNano())
		_ = c.in.Close()
	}
	// Collect every child's grants: the grant's instant (server µs) and when it woke.
	type grant struct{ at, woke int64 }
	var mu sync.Mutex
	var grants []grant
	perChild := make([]int, procs)
	var wg sync.WaitGroup
	for i, c := range children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c.lines.Scan() {
				var g grant
				if _, err := fmt.Sscanf(c.lines.Text(), "grant %d %d", &g.at, &g.woke); err == nil {
					mu.Lock()
					grants = append(grants, g)
					perChild[i]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for i, c := range children {
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}

	want := int(rate * window.Seconds())
	t.Logf("%d acquires in %v by %d processes (%v each)", len(grants), window, procs, perChild)
	if len(grants) < want-2 || len(grants) > want+2 {
		t.Errorf("%d acquires completed in %v, want %d ± 2", len(grants), window, want)
	}
	for i, n := range perChild {
		if n == 0 {
			t.Errorf("child %d acquired nothing: the processes did not share the key", i)
		}
	}
	slices.SortFunc(grants, func(a, b grant) int { return int(a.at - b.at) })
	interval := int64(1e6 / rate)
	for i, g := range grants {
		// The first grant is free and may also spend the fraction of a permit the key
		// stored between its creation (by the first limiter constructed) and that first
		// acquire, as Guava would: the spacing applies from the second grant on.
		if gap := g.at - grants[max(i-1, 0)].at; i == 1 && gap <= 0 || i > 1 && gap < interval-1000 {
			t.Errorf("grants %d and %d are %d µs apart, want ≥ %d µs", i-1, i, gap, interval-1000)
		}
		if g.woke < g.at-1000 {
			t.Errorf("grant %d at %d: its process woke at %d, %d µs early", i, g.at, g.woke, g.at-g.woke)
		}
	}
}

const childEnv = "SMOOTH_MULTIPROCESS_CHILD"

// scanUntil reads lines until one equals want, reporting whether it came.
func scanUntil(s *bufio.Scanner, want string) bool {
	for s.Scan() {
		if strings.TrimSpace(s.Text()) == want {
			return true
		}
	}
	return false
}

// atKey carries, in a context, where recordingStore writes the instant of the grant.
type atKey struct{}

// recordingStore reports the instant the store granted a request (Decision.At) to the
// caller whose context carries an atKey, so a child can report when Redis granted.
type recordingStore struct{ store.Store }

func (s recordingStore) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	d, err := s.Store.Apply(ctx, key, a, req)
	if at, ok := ctx.Value(atKey{}).(*int64); ok && err == nil {
		*at = d.At
	}
	return d, err
}

// multiProcessChild is one process of TestSmoothMultiProcessPacing.
func multiProcessChild(t *testing.T) {
	rate, _ := strconv.ParseFloat(os.Getenv("SMOOTH_RATE"), 64)
	window, _ := time.ParseDuration(os.Getenv("SMOOTH_WINDOW"))
	client := redis.NewClient(&redis.Options{Addr: os.Getenv("SMOOTH_REDIS")})
	defer client.Close()
	if err := client.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	rec := recordingStore{distributed.New(client)} // the server's TIME
	fmt.Println("ready")
	var startNanos int64
	if _, err := fmt.Fscanln(os.Stdin, &startNanos); err != nil {
		t.Fatal(err)
	}
	start := time.Unix(0, startNanos)
	time.Sleep(time.Until(start)) // a common real start: this test measures real time
	l, err := smooth.NewBursty(rate, smooth.WithStore(rec, os.Getenv("SMOOTH_KEY")))
	if err != nil {
		t.Fatal(err)
	}
	// The window ends by cancelling, not by a deadline: Acquire would refuse up front every
	// wait that a deadline cuts short, and a call delayed on a loaded machine would refuse
	// one that still fits, which would measure the load instead of the pacing.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := time.AfterFunc(time.Until(start.Add(window)), cancel)
	defer stop.Stop()
	// Several callers per process keep reservations queued, so a process descheduled for a
	// while (a loaded machine) does not leave the key idle.
	var out sync.Mutex
	var wg sync.WaitGroup
	for range goroutinesPerChild {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				var at int64
				if _, err := l.Acquire(context.WithValue(ctx, atKey{}, &at), 1); err != nil {
					if ctx.Err() == nil {
						t.Error(err)
					}
					return
				}
				woke := time.Now().UnixMicro()
				out.Lock()
				fmt.Printf("grant %d %d\n", at, woke)
				out.Unlock()
			}
		}()
	}
	wg.Wait()
}

const goroutinesPerChild = 4
