package smooth_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/internal/childproc"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/smooth"
	"github.com/ratekit/limiter/store"
)

// TestSmoothMultiProcessPacing runs 3 processes (this test binary, re-executed) whose
// callers acquire one permit at a time, as fast as they are let, from one SmoothBursty(50/s)
// key of a distributed.Store for about 2 s of real time, each reservation made atomically in
// Redis at the server's time and slept locally. Together they must be paced as one Guava
// limiter, and no process may wake before its grant.
//
// The processes run on the real clock, and on a loaded machine any of them may be
// descheduled at any point, leaving the key idle: it then stores permits, and later grants
// come closer together, as Guava's would. So the test checks the instants Redis granted
// against Guava's rules, which hold whatever the schedule (checkPacing): consecutive grants
// that both waited are exactly one interval apart, and stored permits never exceed what
// the time since the key's creation (and the 1 s maximum) allows. No reservation is
// cancelled (every caller sleeps out its last one), so the sequence has no holes. What the
// scheduler decides, how many grants fall in the 2 s, is only logged.
//
// The processes start together: each reports that it is ready on stdout, and the parent
// then sends them all the same start instant on stdin.
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
	children := make([]childproc.Child, procs)
	for i := range children {
		children[i] = childproc.Start(ctx, t, "TestSmoothMultiProcessPacing", childEnv+"=1", "SMOOTH_REDIS="+srv.Addr(),
			"SMOOTH_KEY="+key, "SMOOTH_RATE="+strconv.FormatFloat(rate, 'g', -1, 64), "SMOOTH_WINDOW="+window.String())
	}
	// Wait for every child to be connected and ready, then start them all at once.
	for i, c := range children {
		if !scanUntil(c.Lines, "ready") {
			t.Fatalf("child %d exited before it was ready", i)
		}
	}
	start := time.Now().Add(100 * time.Millisecond)
	for _, c := range children {
		fmt.Fprintln(c.In, start.UnixNano())
		_ = c.In.Close()
	}
	// Collect every child's grants: the grant's instant and wait (server µs) and when it woke.
	var mu sync.Mutex
	var grants []grant
	var woke []int64
	perChild := make([]int, procs)
	var wg sync.WaitGroup
	for i, c := range children {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c.Lines.Scan() {
				var g grant
				var w int64
				if _, err := fmt.Sscanf(c.Lines.Text(), "grant %d %d %d", &g.at, &g.wait, &w); err == nil {
					mu.Lock()
					grants, woke = append(grants, g), append(woke, w)
					perChild[i]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	for i, c := range children {
		if err := c.Cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}

	end := start.Add(window).UnixMicro()
	inWindow := 0
	for _, g := range grants {
		if g.at <= end {
			inWindow++
		}
	}
	paced, errs := checkPacing(grants, rate, 1, start.UnixMicro())
	t.Logf("%d acquires by %d processes (%v each), %d granted within the %v (%d without a scheduler), %d paced pairs",
		len(grants), procs, perChild, inWindow, window, int(rate*window.Seconds()), paced)
	for _, e := range errs {
		t.Error(e)
	}
	for i, n := range perChild {
		// Every caller acquires at least once, whatever the schedule.
		if n < goroutinesPerChild {
			t.Errorf("child %d reported %d acquires, want at least %d (one per caller)", i, n, goroutinesPerChild)
		}
	}
	if paced == 0 {
		// 12 callers never had two reservations pending at once: the key was never shared
		// under contention, so the exact-interval rule was not exercised.
		t.Errorf("no two consecutive grants both waited: the processes never queued behind each other")
	}
	for i, g := range grants {
		// The caller sleeps after the reply, which comes after the server's now.
		if woke[i] < g.at-1000 {
			t.Errorf("grant at %d: its process woke at %d, %d µs early", g.at, woke[i], g.at-woke[i])
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

// decisionKey carries, in a context, where recordingStore writes the decision of a grant.
type decisionKey struct{}

// recordingStore reports the decision of a granted request (Decision.At and Wait) to the
// caller whose context carries a decisionKey, so a child can report what Redis granted.
type recordingStore struct{ store.Store }

func (s recordingStore) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	d, err := s.Store.Apply(ctx, key, a, req)
	if p, ok := ctx.Value(decisionKey{}).(*algo.Decision); ok && err == nil {
		*p = d
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
	rec := recordingStore{teststore.Redis(t, client)} // the server's TIME
	fmt.Println("ready")
	var startNanos int64
	if _, err := fmt.Fscanln(os.Stdin, &startNanos); err != nil {
		t.Fatal(err)
	}
	start := time.Unix(0, startNanos)
	time.Sleep(time.Until(start)) // a common real start: the key is created at start or later
	l, err := smooth.New(algo.SmoothBursty{Rate: rate}, smooth.WithStore(rec, os.Getenv("SMOOTH_KEY")))
	if err != nil {
		t.Fatal(err)
	}
	end := start.Add(window)
	// Several callers per process keep reservations queued, so a process descheduled for a
	// while does not (often) leave the key idle. Each acquires at least once and never
	// cancels a reservation: every grant Redis made is reported.
	var out sync.Mutex
	var wg sync.WaitGroup
	for range goroutinesPerChild {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for first := true; first || time.Now().Before(end); first = false {
				var d algo.Decision
				if _, err := l.Acquire(context.WithValue(context.Background(), decisionKey{}, &d), 1); err != nil {
					t.Error(err)
					return
				}
				woke := time.Now().UnixMicro()
				out.Lock()
				fmt.Printf("grant %d %d %d\n", d.At, d.Wait.Microseconds(), woke)
				out.Unlock()
			}
		}()
	}
	wg.Wait()
}

const goroutinesPerChild = 4
