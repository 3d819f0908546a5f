package smooth_test

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/smooth"
)

// The golden files hold scenarios run through Guava's own RateLimiter (31.1) by
// testdata/guava/GuavaOracle.java, with every wait Guava slept, in µs:
//
//	scenarios.golden  the behaviours Guava's RateLimiterTest checks (pacing, a large
//	                  acquire paid by the next caller, bursts after idle, the warm-up
//	                  curve and its return to cold, setRate mid-stream for both kinds,
//	                  tryAcquire with no wait, some wait, overflow and negative timeouts,
//	                  weights, infinite and tiny rates), and a few more;
//	random.golden     8 random sequences of 800 operations (4 per kind): acquires,
//	                  tryAcquires with various timeouts, sleeps up to 15 s of idleness,
//	                  setRate to other rates and to +Inf and back.
//
// The same table runs on the default private local store and on the Redis store: every
// wait must be Guava's to the microsecond.

// epoch is where the fake clocks start; Guava's stopwatch starts at 0, and only
// differences of instants matter.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// op is one line of a golden file.
type op struct {
	line   int
	kind   string // bursty, warmup, acquire, try, sleep, rate
	n      int64
	us     int64   // sleep, try timeout, warmup
	rate   float64 // bursty, warmup, rate
	extra  float64 // bursty max burst seconds, warmup cold factor (0: default)
	want   int64   // acquire and try: the µs slept
	denied bool    // try: false
}

type scenario struct {
	name string
	ops  []op
}

// readGolden parses a golden file.
func readGolden(t *testing.T, path string) []scenario {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []scenario
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		o, err := parseOp(line, text)
		if err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		switch o.kind {
		case "scenario":
			out = append(out, scenario{name: text[len("scenario "):]})
		case "end":
		default:
			if len(out) == 0 {
				t.Fatalf("%s:%d: operation outside a scenario", path, line)
			}
			out[len(out)-1].ops = append(out[len(out)-1].ops, o)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func parseOp(line int, text string) (op, error) {
	lhs, rhs, hasResult := strings.Cut(text, " = ")
	f := strings.Fields(lhs)
	o := op{line: line, kind: f[0]}
	num := func(i int) float64 {
		if i >= len(f) {
			return 0
		}
		if f[i] == "inf" {
			return math.Inf(1)
		}
		v, err := strconv.ParseFloat(f[i], 64)
		if err != nil {
			panic(err) // caught below
		}
		return v
	}
	integer := func(i int) int64 {
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			panic(err)
		}
		return v
	}
	var perr error
	func() {
		defer func() {
			if r := recover(); r != nil {
				perr = fmt.Errorf("bad line %q: %v", text, r)
			}
		}()
		switch o.kind {
		case "bursty":
			o.rate, o.extra = num(1), num(2)
		case "warmup":
			o.rate, o.us, o.extra = num(1), integer(2), num(3)
		case "acquire":
			o.n = integer(1)
		case "try":
			o.n, o.us = integer(1), integer(2)
		case "sleep":
			o.us = integer(1)
		case "rate":
			o.rate = num(1)
		case "scenario", "end":
		default:
			panic("unknown operation")
		}
		if o.kind == "acquire" || o.kind == "try" {
			if !hasResult {
				panic("missing result")
			}
			if rhs == "F" {
				o.denied = true
			} else {
				o.want, perr = strconv.ParseInt(rhs, 10, 64)
			}
		}
	}()
	return o, perr
}

// micros converts µs to a Duration, saturating at the largest Duration.
func micros(us int64) time.Duration {
	if us > math.MaxInt64/1000 {
		return math.MaxInt64
	}
	if us < math.MinInt64/1000 {
		return math.MinInt64
	}
	return time.Duration(us) * time.Microsecond
}

// storeOpts returns the options that put a limiter on the store under test.
type storeOpts func(t *testing.T, clk *clockx.Fake) []smooth.Option

// runScenario runs sc on a limiter made with the given store options and fails at the
// first wait that differs from Guava's.
func runScenario(t *testing.T, sc scenario, with storeOpts) {
	t.Helper()
	ctx := context.Background()
	clk := clockx.NewFake(epoch)
	var l *smooth.Limiter
	for i, o := range sc.ops {
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("scenario %s, op %d (line %d: %s): %s", sc.name, i, o.line, o.kind, fmt.Sprintf(format, args...))
		}
		var err error
		switch o.kind {
		case "bursty": // extra: MaxBurstSeconds, 0 for Guava's 1
			opts := append([]smooth.Option{smooth.WithClock(clk)}, with(t, clk)...)
			l, err = smooth.New(algo.SmoothBursty{Rate: o.rate, MaxBurstSeconds: o.extra}, opts...)
		case "warmup": // extra: ColdFactor, 0 for Guava's 3
			opts := append([]smooth.Option{smooth.WithClock(clk)}, with(t, clk)...)
			l, err = smooth.New(algo.SmoothWarmingUp{Rate: o.rate, Warmup: micros(o.us), ColdFactor: o.extra}, opts...)
		case "sleep":
			clk.Add(micros(o.us))
		case "rate":
			err = l.SetRate(o.rate)
			if got := l.Rate(); got != o.rate {
				fail("Rate() = %v after SetRate(%v)", got, o.rate)
			}
		case "acquire":
			before := clk.Now()
			var waited time.Duration
			waited, err = l.Acquire(ctx, o.n)
			if err == nil {
				slept := clk.Now().Sub(before)
				if waited != micros(o.want) || slept != waited {
					fail("Acquire(%d) waited %v and slept %v, Guava slept %v", o.n, waited, slept, micros(o.want))
				}
			}
		case "try":
			before := clk.Now()
			var ok bool
			ok, err = l.TryAcquire(ctx, o.n, micros(o.us))
			slept := clk.Now().Sub(before)
			switch {
			case err != nil:
			case o.denied && (ok || slept != 0):
				fail("TryAcquire(%d, %dµs) = %v after sleeping %v, Guava said false", o.n, o.us, ok, slept)
			case !o.denied && (!ok || slept != micros(o.want)):
				fail("TryAcquire(%d, %dµs) = %v after sleeping %v, Guava said true after %v",
					o.n, o.us, ok, slept, micros(o.want))
			}
		}
		if err != nil {
			fail("%v", err)
		}
	}
}

func localStore(*testing.T, *clockx.Fake) []smooth.Option { return nil }

func runGolden(t *testing.T, file string, with storeOpts) {
	scenarios := readGolden(t, file)
	if len(scenarios) == 0 {
		t.Fatalf("%s holds no scenario", file)
	}
	ops := 0
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			runScenario(t, sc, with)
		})
		ops += len(sc.ops)
	}
	t.Logf("%s: %d scenarios, %d operations", file, len(scenarios), ops)
}

func TestSmoothGuavaScenariosLocal(t *testing.T) {
	t.Parallel()
	runGolden(t, "testdata/scenarios.golden", localStore)
}

func TestSmoothGuavaRandomLocal(t *testing.T) {
	t.Parallel()
	runGolden(t, "testdata/random.golden", localStore)
}

func TestSmoothGuavaScenariosRedis(t *testing.T) {
	t.Parallel()
	c := redisClient(t, true)
	runGolden(t, "testdata/scenarios.golden", func(t *testing.T, clk *clockx.Fake) []smooth.Option {
		return []smooth.Option{redisStoreOption(t, c, clk)}
	})
}

func TestSmoothGuavaRandomRedis(t *testing.T) {
	t.Parallel()
	c := redisClient(t, true)
	runGolden(t, "testdata/random.golden", func(t *testing.T, clk *clockx.Fake) []smooth.Option {
		return []smooth.Option{redisStoreOption(t, c, clk)}
	})
}
