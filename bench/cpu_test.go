package bench

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/time/rate"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/local"
)

// cpuEnv turns TestThreadCPU on: BENCH_CPU=1. BENCH_CPU_N sets the calls per run (2M),
// BENCH_CPU_RUNS the runs per row (7), BENCH_CPU_ROWS a regexp of the rows to run.
const cpuEnv = "BENCH_CPU"

// rusageThread is Linux's RUSAGE_THREAD: the calling thread's usage alone.
const rusageThread = 1

// threadCPU returns the CPU time (user + system) the calling OS thread has used.
func threadCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuRow is one contender of TestThreadCPU: call makes call number i.
type cpuRow struct {
	name string
	call func(i int)
}

// TestThreadCPU prints the thread CPU time per call of the goal rows of BenchmarkLocal*
// (one key: our Allow, our store's Apply and x/time/rate's AllowN; 1k zipf keys: our
// Allow and sethvargo's Take) and their ratios. Wall-clock benchmarks swing 2–5× on a
// shared machine; CPU time counts only what the measured thread ran. Each run makes n
// calls on a goroutine locked to its thread, reading getrusage(RUSAGE_THREAD) around
// them; the rows take turns, 7 runs each, and each reports its second best, so that a
// contender and its peer see the same machine. Run it alone:
//
//	cd bench && BENCH_CPU=1 go test -run TestThreadCPU -count=1 -v .
func TestThreadCPU(t *testing.T) {
	if os.Getenv(cpuEnv) == "" {
		t.Skip(cpuEnv + " not set")
	}
	n := 2_000_000
	if s := os.Getenv(cpuEnv + "_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	req := algo.Request{N: 1}
	newStore := func() *local.Store {
		s, err := local.New(local.WithSweepInterval(0))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	newLim := func(s *local.Store) *limiter.Limiter {
		l, err := limiter.New(s, tokenBucket)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	fail := func(what string, d algo.Decision, err error) {
		panic(fmt.Sprintf("%s = %+v, %v", what, d, err))
	}

	l1 := newLim(newStore())
	s1 := newStore()
	xr := rate.NewLimiter(localRate, localBurst)

	ks := keysFor(1_000)
	key := func(i int) string { return ks.keys[ks.seq[i&(seqLen-1)]] }
	sk := newStore()
	lk := newLim(sk)
	for _, k := range ks.keys {
		_, _ = sk.Apply(ctx, k, tokenBucket, req)
	}
	sv, err := newSethvargoStore()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sv.Close(ctx) })
	for _, k := range ks.keys {
		_, _, _, _, _ = sv.Take(ctx, k)
	}

	st, now := tokenBucket.NewState(), time.Now().UnixMicro()
	rows := []cpuRow{
		{"one key: ratekit Allow", func(int) {
			if d, err := l1.Allow(ctx, "key"); err != nil || !d.Allowed {
				fail("Allow", d, err)
			}
		}},
		{"one key: ratekit Charge", func(int) {
			if d, err := l1.Charge(ctx, "key", 1); err != nil || !d.Allowed {
				fail("Charge", d, err)
			}
		}},
		{"one key: local.Store.Apply", func(int) {
			if d, err := s1.Apply(ctx, "key", tokenBucket, req); err != nil || !d.Allowed {
				fail("Apply", d, err)
			}
		}},
		{"one key: x/time/rate AllowN", func(int) {
			if !xr.AllowN(time.Now(), 1) {
				panic("AllowN denied")
			}
		}},
		{"1k zipf: ratekit Allow", func(i int) {
			if d, err := lk.Allow(ctx, key(i)); err != nil || !d.Allowed {
				fail("Allow", d, err)
			}
		}},
		{"1k zipf: local.Store.Apply", func(i int) {
			if d, err := sk.Apply(ctx, key(i), tokenBucket, req); err != nil || !d.Allowed {
				fail("Apply", d, err)
			}
		}},
		{"1k zipf: sethvargo Take", func(i int) {
			if _, _, _, _, err := sv.Take(ctx, key(i)); err != nil {
				panic(err)
			}
		}},
		// The parts: the algorithm's transition alone, and the two clocks.
		{"part: TokenBucket.Apply", func(i int) {
			now += 1
			if d := tokenBucket.Apply(st, now, req); !d.Allowed {
				panic("denied")
			}
		}},
		{"part: gettimeofday", func(int) {
			var tv syscall.Timeval
			_ = syscall.Gettimeofday(&tv)
			now += tv.Usec & 1
		}},
		{"part: time.Now().UnixMicro()", func(int) { now += time.Now().UnixMicro() & 1 }},
	}
	if re := os.Getenv(cpuEnv + "_ROWS"); re != "" {
		m := regexp.MustCompile(re)
		rows = slices.DeleteFunc(rows, func(r cpuRow) bool { return !m.MatchString(r.name) })
	}

	const xname, sname = "one key: x/time/rate AllowN", "1k zipf: sethvargo Take"
	runs := 7
	if s := os.Getenv(cpuEnv + "_RUNS"); s != "" {
		var err error
		if runs, err = strconv.Atoi(s); err != nil || runs < 2 {
			t.Fatalf("%s_RUNS=%q: want a count ≥ 2", cpuEnv, s)
		}
	}
	per := make([][]float64, len(rows)) // ns per call of each run
	done := make(chan struct{})
	go func() {
		defer close(done)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		for _, r := range rows { // warm up: caches, branch predictors, the heap
			for i := range n / 10 {
				r.call(i)
			}
		}
		runtime.GC()
		for range runs {
			for j, r := range rows {
				start := threadCPU()
				for i := range n {
					r.call(i)
				}
				per[j] = append(per[j], float64(threadCPU()-start)/float64(n))
			}
		}
	}()
	<-done

	best := map[string]float64{}
	for j, r := range rows {
		slices.Sort(per[j])
		best[r.name] = per[j][1]
		t.Logf("%-30s %7.1f ns (runs: %s)", r.name, per[j][1], fmtRuns(per[j]))
	}
	ratio := func(a, b string) float64 { return best[a] / best[b] }
	t.Logf("one key: Allow ÷ x/time/rate = %.2f× (goal ≤ 0.8×); Apply ÷ x/time/rate = %.2f×",
		ratio("one key: ratekit Allow", xname), ratio("one key: local.Store.Apply", xname))
	t.Logf("1k zipf: Allow ÷ sethvargo = %.2f× (goal ≤ 1.0×); Apply ÷ sethvargo = %.2f×",
		ratio("1k zipf: ratekit Allow", sname), ratio("1k zipf: local.Store.Apply", sname))
}

func fmtRuns(v []float64) string {
	s := ""
	for i, x := range v {
		if i > 0 {
			s += " "
		}
		s += strconv.FormatFloat(x, 'f', 0, 64)
	}
	return s
}
