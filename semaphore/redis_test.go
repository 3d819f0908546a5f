package semaphore_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/childproc"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/internal/teststore"
	"github.com/ratekit/limiter/semaphore"
	"github.com/ratekit/limiter/store"
)

// The multi-process tests re-execute the test binary as a helper process that runs
// TestSemaphoreHelperProcess with its instructions in the environment.
const (
	semEnvRole   = "LIMITER_SEM_HELPER" // "contend" or "hold"
	semEnvAddr   = "LIMITER_SEM_ADDR"
	semEnvPrefix = "LIMITER_SEM_PREFIX"
	semEnvFair   = "LIMITER_SEM_FAIR"
	semEnvClock  = "LIMITER_SEM_CLOCK" // µs of a frozen fake clock for the store; "" = server TIME
	semEnvTTL    = "LIMITER_SEM_TTL"
)

const (
	semPermits    = 3
	semGoroutines = 8
	semRounds     = 25
)

var semPrefixes atomic.Int64

func semPrefix() string { return fmt.Sprintf("semtest%d-%d:", os.Getpid(), semPrefixes.Add(1)) }

// contendResult is what one process observed while contending.
type contendResult struct {
	Grants    int64
	MaxLocal  int64 // holders at once in this process
	MaxGlobal int64 // holders at once in every process, by a Redis counter around the work
	MaxZCard  int64 // the semaphore's own holders set, read while holding
	Overlaps  int64 // grants during which the other process held a permit too
	Errors    []string
}

// contend has semGoroutines goroutines each take and give back a permit of the semaphore
// "pool" semRounds times. Around its work each holder increments and decrements a Redis
// counter shared by every process: a value above Permits means two processes' holders
// overlapped beyond the limit.
func contend(ctx context.Context, c *redis.Client, prefix string, fair bool) contendResult {
	// A generous per-call timeout: the machine running -race tests may be loaded, and the
	// facade does not retry a failing store.
	st, err := distributed.New(c, distributed.WithPrefix(prefix), distributed.WithTimeout(10*time.Second))
	if err != nil {
		return contendResult{Errors: []string{err.Error()}}
	}
	sem, err := semaphore.New(st, algo.Semaphore{Permits: semPermits, LeaseTTL: 30 * time.Second, Fair: fair},
		semaphore.WithPoll(5*time.Millisecond))
	if err != nil {
		return contendResult{Errors: []string{err.Error()}}
	}
	counter, holders := prefix+"inside", prefix+"{pool}:sem"
	var (
		res                     contendResult
		mu                      sync.Mutex
		inUse, maxLocal, grants atomic.Int64
		overlaps                atomic.Int64
		wg                      sync.WaitGroup
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(res.Errors) < 10 {
			res.Errors = append(res.Errors, fmt.Sprintf(format, args...))
		}
	}
	peak := func(v *int64, n int64) {
		mu.Lock()
		*v = max(*v, n)
		mu.Unlock()
	}
	for g := 0; g < semGoroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < semRounds; i++ {
				l, err := sem.Acquire(ctx, "pool")
				if err != nil {
					fail("Acquire: %v", err)
					return
				}
				grants.Add(1)
				local := inUse.Add(1)
				for p := maxLocal.Load(); local > p && !maxLocal.CompareAndSwap(p, local); p = maxLocal.Load() {
				}
				global, err1 := c.Incr(ctx, counter).Result()
				zcard, err2 := c.ZCard(ctx, holders).Result()
				if g == 0 && i == 0 && !rendezvous(ctx, c, prefix+"procs") {
					fail("the other process never held a permit while this one did")
				} else if g == 0 && i == 0 {
					overlaps.Add(1) // both processes hold a permit now
				}
				for k := 0; k < 3; k++ { // some work, so that holders overlap
					_ = c.Ping(ctx).Err()
				}
				err3 := c.Decr(ctx, counter).Err()
				inUse.Add(-1)
				if err := errors.Join(err1, err2, err3, l.Release(ctx)); err != nil {
					fail("while holding: %v", err)
					return
				}
				if global > local {
					overlaps.Add(1) // somebody else held at the same time: another process
				}
				peak(&res.MaxGlobal, global)
				peak(&res.MaxZCard, zcard)
				if local > semPermits || global > semPermits || zcard > semPermits {
					fail("holders at once: %d here, %d everywhere, %d in the set; Permits %d", local, global, zcard, semPermits)
				}
			}
		}()
	}
	wg.Wait()
	res.Grants, res.MaxLocal, res.Overlaps = grants.Load(), maxLocal.Load(), overlaps.Load()
	return res
}

// rendezvous is called by one holder of each of the two contending processes, with its
// first permit held: it waits (polling Redis until ctx ends) until the other process's
// holder has called it too, so that the processes certainly hold permits at the same time
// at least once, however the scheduler runs them. It reports whether that happened.
func rendezvous(ctx context.Context, c *redis.Client, key string) bool {
	if err := c.SAdd(ctx, key, os.Getpid()).Err(); err != nil {
		return false
	}
	for {
		if n, err := c.SCard(ctx, key).Result(); err != nil || n >= 2 {
			return err == nil
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Millisecond): // polling the other process, bounded by ctx
		}
	}
}

// helper starts this test binary as a helper process with env, and returns it with a
// scanner over its standard output. The process is killed when the test ends.
func helper(t *testing.T, env ...string) (*exec.Cmd, *bufio.Scanner, io.WriteCloser) {
	t.Helper()
	c := childproc.Start(context.Background(), t, "TestSemaphoreHelperProcess", env...)
	return c.Cmd, c.Lines, c.In
}

// expectLine reads lines until one starts with prefix and returns the rest of it.
func expectLine(t *testing.T, sc *bufio.Scanner, prefix string) string {
	t.Helper()
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			return rest
		}
	}
	t.Fatalf("helper process ended without printing %q (%v)", prefix, sc.Err())
	return ""
}

// TestSemaphoreHelperProcess is not a test: it is the helper process of the multi-process
// tests, and skips when run normally.
func TestSemaphoreHelperProcess(t *testing.T) {
	role := os.Getenv(semEnvRole)
	if role == "" {
		t.Skip("helper process of the multi-process semaphore tests")
	}
	c := redis.NewClient(&redis.Options{Addr: os.Getenv(semEnvAddr), ContextTimeoutEnabled: true})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prefix, fair := os.Getenv(semEnvPrefix), os.Getenv(semEnvFair) == "1"
	switch role {
	case "contend":
		fmt.Println("READY")
		out, _ := json.Marshal(contend(ctx, c, prefix, fair))
		fmt.Printf("RESULT %s\n", out)
	case "hold":
		// Take every permit, say so, then wait to be killed without releasing anything.
		opts := []distributed.Option{distributed.WithPrefix(prefix), distributed.WithTimeout(10 * time.Second)}
		if us, err := strconv.ParseInt(os.Getenv(semEnvClock), 10, 64); err == nil {
			opts = append(opts, distributed.WithClientClock(clockx.NewFake(time.UnixMicro(us))))
		}
		ttl, _ := time.ParseDuration(os.Getenv(semEnvTTL))
		sem, err := semaphore.New(teststore.Redis(t, c, opts...), algo.Semaphore{Permits: 2, LeaseTTL: ttl, Fair: fair})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 2; i++ {
			if _, err := sem.Acquire(ctx, "pool"); err != nil {
				t.Fatal(err)
			}
		}
		fmt.Println("HELD")
		_, _ = io.Copy(io.Discard, os.Stdin) // until killed, or the parent goes away
	}
}

// TestSemaphoreTwoProcesses runs contending goroutines in this process and in a helper
// process against one Redis: never more than Permits hold at once, whether counted in each
// process, by a counter in Redis around the work, or in the semaphore's own set.
func TestSemaphoreTwoProcesses(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	for _, fair := range []bool{false, true} {
		t.Run(fmt.Sprint("fair=", fair), func(t *testing.T) {
			t.Parallel()
			c := srv.Client(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			prefix := semPrefix()
			f := "0"
			if fair {
				f = "1"
			}
			cmd, sc, _ := helper(t, semEnvRole+"=contend", semEnvAddr+"="+srv.Addr(), semEnvPrefix+"="+prefix, semEnvFair+"="+f)
			expectLine(t, sc, "READY")
			mine := contend(ctx, c, prefix, fair)
			var theirs contendResult
			if err := json.Unmarshal([]byte(expectLine(t, sc, "RESULT ")), &theirs); err != nil {
				t.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("helper process: %v", err)
			}
			for who, r := range map[string]contendResult{"this process": mine, "helper process": theirs} {
				for _, e := range r.Errors {
					t.Errorf("%s: %s", who, e)
				}
				if want := int64(semGoroutines * semRounds); r.Grants != want {
					t.Errorf("%s: %d grants, want %d", who, r.Grants, want)
				}
				t.Logf("%s: peaks of %d holders here, %d everywhere, %d in the set (Permits %d); %d grants overlapped the other process",
					who, r.MaxLocal, r.MaxGlobal, r.MaxZCard, semPermits, r.Overlaps)
			}
			if mine.Overlaps == 0 || theirs.Overlaps == 0 {
				t.Error("the two processes never held permits at the same time: the test proved nothing")
			}
			if n, err := c.Exists(ctx, prefix+"{pool}:sem", prefix+"{pool}:sem:q").Result(); err != nil || n != 0 {
				t.Errorf("semaphore keys left after every release: %d, %v", n, err)
			}
		})
	}
}

// TestSemaphoreKilledHolder kills a helper process that holds every permit, without
// Release: the permits come free when the leases expire, not before. Time is a fake clock
// the helper's store and ours share, so the instant is exact.
func TestSemaphoreKilledHolder(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx := context.Background()
	prefix := semPrefix()
	const ttl = time.Minute
	clk := clockx.NewFake(semStart)
	cmd, sc, _ := helper(t, semEnvRole+"=hold", semEnvAddr+"="+srv.Addr(), semEnvPrefix+"="+prefix,
		semEnvClock+"="+strconv.FormatInt(semStart.UnixMicro(), 10), semEnvTTL+"="+ttl.String(), semEnvFair+"=1")
	expectLine(t, sc, "HELD")
	_ = cmd.Process.Kill()
	_ = cmd.Wait()

	sem, err := semaphore.New(teststore.Redis(t, c, distributed.WithPrefix(prefix), distributed.WithClientClock(clk),
		distributed.WithTimeout(10*time.Second)),
		algo.Semaphore{Permits: 2, LeaseTTL: ttl, Fair: true})
	if err != nil {
		t.Fatal(err)
	}
	try := func(want bool) {
		t.Helper()
		if _, ok, err := sem.TryAcquire(ctx, "pool"); ok != want || err != nil {
			t.Fatalf("TryAcquire at +%v = %v, %v; want %v", clk.Now().Sub(semStart), ok, err, want)
		}
	}
	try(false)
	clk.Add(ttl - time.Microsecond)
	try(false)
	clk.Add(time.Microsecond)
	try(true)
	try(true)
	try(false)
}

// TestSemaphoreKilledHolderServerTime is the same on the server's clock: a blocked
// Acquire gets the permit of a killed holder once its lease has expired in real time.
func TestSemaphoreKilledHolderServerTime(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prefix := semPrefix()
	const ttl = 2 * time.Second
	launched := time.Now() // the helper's leases are granted after this
	cmd, sc, _ := helper(t, semEnvRole+"=hold", semEnvAddr+"="+srv.Addr(), semEnvPrefix+"="+prefix,
		semEnvTTL+"="+ttl.String(), semEnvFair+"=0")
	expectLine(t, sc, "HELD")
	held := time.Now()
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	sem, err := semaphore.New(teststore.Redis(t, c, distributed.WithPrefix(prefix), distributed.WithTimeout(10*time.Second)),
		algo.Semaphore{Permits: 2, LeaseTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	// Denied while the leases certainly last: a machine stalled for the whole LeaseTTL
	// since the helper started may see them expired already.
	if _, ok, err := sem.TryAcquire(ctx, "pool"); err != nil || ok && time.Since(launched) < ttl {
		t.Fatalf("TryAcquire right after the kill = %v, %v; want denied", ok, err)
	}
	if _, err := sem.Acquire(ctx, "pool"); err != nil {
		t.Fatal(err)
	}
	// held is after the grant, so waited is at most the time since the grant; the slack
	// covers a loaded machine, and a lease that outlived its TTL by another TTL exceeds it.
	if waited, slack := time.Since(held), 1500*time.Millisecond; waited > ttl+slack {
		t.Errorf("the permit came free %v after the holder's grant, LeaseTTL is %v", waited, ttl)
	}
}

// TestSemaphoreRedisRestartKeepAlive restarts a Redis without persistence under two held
// leases: the semaphore state is lost, so their keep-alives report ErrLeaseExpired at the
// first renewal after the restart (their holders must stop: new holders may be admitted
// at once), calls during the outage fail with store.ErrUnavailable, and new leases are
// granted after the restart.
func TestSemaphoreRedisRestartKeepAlive(t *testing.T) {
	t.Parallel()
	srv := redistest.Start(t)
	c := srv.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A dead server refuses connections at once, so the timeout only bounds a loaded machine.
	st := teststore.Redis(t, c, distributed.WithPrefix(semPrefix()), distributed.WithTimeout(5*time.Second))
	sem, err := semaphore.New(st, algo.Semaphore{Permits: 2, LeaseTTL: 3 * time.Second, Fair: true})
	if err != nil {
		t.Fatal(err)
	}
	var chans []<-chan error
	for i := 0; i < 2; i++ {
		l, err := sem.Acquire(ctx, "pool")
		if err != nil {
			t.Fatal(err)
		}
		chans = append(chans, l.KeepAlive(ctx))
	}
	srv.Kill()
	if _, _, err := sem.TryAcquire(ctx, "pool"); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("TryAcquire while Redis is down: %v, want ErrUnavailable", err)
	}
	srv.Restart()
	for i, ch := range chans {
		select {
		case err := <-ch:
			if !errors.Is(err, semaphore.ErrLeaseExpired) {
				t.Errorf("keep-alive %d stopped with %v, want ErrLeaseExpired", i, err)
			}
		case <-ctx.Done():
			t.Fatalf("keep-alive %d did not report the lost lease", i)
		}
	}
	for i := 0; i < 2; i++ {
		if _, err := sem.Acquire(ctx, "pool"); err != nil {
			t.Fatalf("Acquire %d after the restart: %v", i, err)
		}
	}
}
