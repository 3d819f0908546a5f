package distributed_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
)

// The child side of TestExactAcrossProcesses reads its instructions from these variables.
const (
	childEnv    = "LIMITER_DISTRIBUTED_EXACT_CHILD" // Redis address; set only in a child
	childPrefix = "LIMITER_DISTRIBUTED_EXACT_PREFIX"
)

const (
	exactChildren   = 2
	exactGoroutines = 32
	exactAttempts   = 12 // per goroutine and algorithm: 2×32×12 = 768 > exactBound
	exactBound      = 500
	exactBarrier    = "barrier"
)

// exactAlgorithms are the rules whose bound the processes race for. Nothing may refill
// during the test: the fixed window spans a year (crossing its boundary mid-test is a
// one-in-millions chance), the log's window an hour, and the bucket refills one token in
// about 17 minutes.
func exactAlgorithms() map[string]algo.Algorithm {
	return map[string]algo.Algorithm{
		"fixed-window": algo.FixedWindow{Limit: exactBound, Window: 365 * 24 * time.Hour},
		"sliding-log":  algo.SlidingWindowLog{Limit: exactBound, Window: time.Hour},
		"token-bucket": algo.TokenBucket{Rate: 0.001, Burst: exactBound},
	}
}

// TestExactAcrossProcesses re-runs the test binary as two child processes, each hammering
// one key per algorithm from 32 goroutines through Redis at the server's time. Between them
// they must admit exactly the bound: atomic scripts leave no room for a race between
// processes to over-admit, and a denial must never be lost either.
func TestExactAcrossProcesses(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := ctxTimeout(t, 60*time.Second)
	prefix := freshPrefix()

	var (
		wg      sync.WaitGroup
		ready   = make(chan struct{}, exactChildren)
		stderrs = make([]bytes.Buffer, exactChildren)
		lines   = make([][]string, exactChildren) // each child's stdout
		errs    = make([]error, exactChildren)
	)
	for i := 0; i < exactChildren; i++ {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestExactChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), childEnv+"="+srv.Addr(), childPrefix+"="+prefix)
		cmd.Stderr = &stderrs[i]
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if sc.Text() == "ready" {
					ready <- struct{}{}
				}
				lines[i] = append(lines[i], sc.Text())
			}
			errs[i] = cmd.Wait() // after stdout is drained, as exec requires
		}()
	}
	// Release both children at once, so that their goroutines really contend.
	for i := 0; i < exactChildren; i++ {
		select {
		case <-ready:
		case <-ctx.Done():
			t.Fatal("the children never became ready")
		}
	}
	if err := c.RPush(ctx, prefix+exactBarrier, "go", "go").Err(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	admitted := map[string]int64{}
	for i := range lines {
		if errs[i] != nil {
			t.Fatalf("child %d: %v\nstdout:\n%s\nstderr:\n%s", i, errs[i], strings.Join(lines[i], "\n"), stderrs[i].String())
		}
		for _, line := range lines[i] {
			var name string
			var n int64
			if _, err := fmt.Sscanf(line, "admitted %s %d", &name, &n); err == nil {
				admitted[name] += n
				t.Logf("child %d: %s", i, line)
			}
		}
	}
	for name := range exactAlgorithms() {
		if got, want := admitted[name], int64(exactBound); got != want {
			t.Errorf("%s: %d processes × %d goroutines admitted %d in total, want exactly %d",
				name, exactChildren, exactGoroutines, got, want)
		}
	}
	t.Logf("admitted per algorithm (bound %d, %d attempts): %v",
		exactBound, exactChildren*exactGoroutines*exactAttempts, admitted)
}

// TestExactChild is the child process of TestExactAcrossProcesses; run directly, it skips.
func TestExactChild(t *testing.T) {
	addr := os.Getenv(childEnv)
	if addr == "" {
		t.Skip("helper process of TestExactAcrossProcesses")
	}
	prefix := os.Getenv(childPrefix)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, PoolSize: exactGoroutines})
	defer c.Close()
	s := teststore.Redis(t, c, distributed.WithPrefix(prefix), distributed.WithTimeout(10*time.Second))

	fmt.Println("ready")
	if err := c.BLPop(ctx, 45*time.Second, prefix+exactBarrier).Err(); err != nil {
		t.Fatalf("waiting for the start: %v", err)
	}
	for name, a := range exactAlgorithms() {
		var admitted atomic.Int64
		var wg sync.WaitGroup
		for g := 0; g < exactGoroutines; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < exactAttempts; i++ {
					d, err := s.Apply(ctx, "shared", a, algo.Request{N: 1})
					if err != nil {
						t.Errorf("%s: %v", name, err)
						return
					}
					if d.Allowed {
						admitted.Add(1)
					}
				}
			}()
		}
		wg.Wait()
		fmt.Println("admitted " + name + " " + strconv.FormatInt(admitted.Load(), 10))
	}
}
