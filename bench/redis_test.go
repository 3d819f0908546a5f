package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	ulule "github.com/ulule/limiter/v3"
	ulredis "github.com/ulule/limiter/v3/drivers/store/redis"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/benchtest"
	"github.com/ratekit/limiter/internal/luawire"
	"github.com/ratekit/limiter/internal/redistest"
)

const (
	redisGoroutines = 64
	redisKeys       = 10_000
	redisRate       = 100 // permits per second per key, as in distributed/testdata/bench-evalsha.sh
	redisBurst      = 100
	// ceilingRequests is redis-benchmark's -n.
	ceilingRequests = 200_000
)

// redisAddrEnv names a Redis to use instead of starting one. It must be a throw-away
// server: the benchmarks FLUSHALL it.
const redisAddrEnv = "BENCH_REDIS_ADDR"

// redisServer returns the address of the Redis the benchmarks of b run against:
// BENCH_REDIS_ADDR when set, otherwise a redis-server of its own (internal/redistest: a
// free loopback port, no persistence, killed when b ends; b skips without redis-server).
func redisServer(b *testing.B) string {
	if addr := os.Getenv(redisAddrEnv); addr != "" {
		return addr
	}
	return redistest.Start(b).Addr()
}

// redisKeyList is the shared population of Redis keys.
var redisKeyList = func() []string {
	keys := make([]string, redisKeys)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
	}
	return keys
}()

// runRedis runs call from 64 goroutines over the 10k keys and reports decisions/s and
// what the Redis server spent per decision (meterServer).
func runRedis(b *testing.B, c *redis.Client, call func(ctx context.Context, key string) error) {
	runRedisKeys(b, c, redisKeyList, call)
}

// runRedisKeys runs call from 64 goroutines over keys and reports decisions/s and what the
// Redis server spent per decision (meterServer).
func runRedisKeys(b *testing.B, c *redis.Client, keys []string, call func(ctx context.Context, key string) error) serverUse {
	settleHeap()
	m := meterServer(b, c)
	benchtest.Decisions(b, redisGoroutines, keys, call)
	return m.report(b, b.N)
}

// settleHeap drops what the local benchmarks left on the heap (their key sets: a million
// strings after LocalKeyed and LocalMemory) and collects it, so that a Redis row's client
// does not depend on what ran before it: a GC that marks those strings on every cycle
// cost the client of the batched token bucket 0.7 µs per decision (4.5 against 3.8 µs)
// and 9% of its decisions/s.
func settleHeap() {
	releaseKeySets()
	runtime.GC()
}

// serverUse is what a Redis server spent on a run: CPU seconds (INFO cpu), µs inside the
// top-level commands and the number of commands (INFO commandstats).
type serverUse struct {
	cpu   float64 // used_cpu_user + used_cpu_sys, s
	usec  float64 // µs inside the top-level commands (see cmdUse)
	calls int64   // commands, those the scripts run included (see cmdUse)
}

// serverMeter measures what one Redis server spends on a run.
type serverMeter struct {
	c          *redis.Client
	cpu0, cli0 float64
}

// meterServer resets the server's statistics (CONFIG RESETSTAT: INFO commandstats and
// total_commands_processed start from 0) and notes its CPU time, before a run.
func meterServer(b *testing.B, c *redis.Client) *serverMeter {
	if err := c.ConfigResetStat(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
	return &serverMeter{c: c, cpu0: serverCPU(b, c), cli0: clientCPU()}
}

// report, after a run of n decisions, reports per decision (n > 0):
//   - srv-cpu-µs/op: the server's CPU time (user + system, INFO cpu), its network work
//     (reading, parsing, writing replies) included: what a decision costs a Redis node;
//   - srv-cmd-µs/op: the µs inside the commands (INFO commandstats usec), the script and
//     what it runs: the part of the above the limiter's Lua decides;
//   - cmds/op: the commands Redis ran, a script and each command it runs counted apart;
//   - cli-cpu-µs/op: this process's CPU time (getrusage): the client's side of a decision,
//     the benchmark's goroutines included.
//
// It stops b's timer first, so that its own calls count in neither the time nor the
// allocations of the run, and returns the totals.
func (m *serverMeter) report(b *testing.B, n int) serverUse {
	b.StopTimer()
	cli := clientCPU() - m.cli0
	u := serverUse{cpu: serverCPU(b, m.c) - m.cpu0}
	info, err := m.c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	u.usec, u.calls = cmdUse(info)
	if n > 0 {
		b.ReportMetric(u.cpu*1e6/float64(n), "srv-cpu-µs/op")
		b.ReportMetric(u.usec/float64(n), "srv-cmd-µs/op")
		b.ReportMetric(float64(u.calls)/float64(n), "cmds/op")
		b.ReportMetric(cli*1e6/float64(n), "cli-cpu-µs/op")
	}
	return u
}

// clientCPU is the CPU time (user + system, getrusage) of this process, the benchmark's
// own goroutines included, in seconds.
func clientCPU() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}

// serverCPU is the server's used_cpu_user + used_cpu_sys (INFO cpu), in seconds.
func serverCPU(b *testing.B, c *redis.Client) float64 {
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		b.Fatal(err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), ":")
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			f, _ := strconv.ParseFloat(v, 64)
			total += f
		}
	}
	return total
}

// cmdUse reads INFO commandstats, whose lines look like
// cmdstat_evalsha:calls=5,usec=40,usec_per_call=8.00,rejected_calls=0,failed_calls=0.
// calls counts every command but the bookkeeping of the benchmark and of the client's
// connections (INFO, CONFIG, HELLO, CLIENT, PING, SELECT, AUTH). Redis counts a command a
// script runs (or EXEC) both on its own line and inside the script's usec, so usec sums only
// the scripts and transactions (EVAL*, FCALL*, EXEC) when any ran, and every counted command
// otherwise.
func cmdUse(info string) (usec float64, calls int64) {
	var all, outer float64
	var sawOuter bool
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		name, ok2 := strings.CutPrefix(name, "cmdstat_")
		if !ok || !ok2 {
			continue
		}
		cmd, _, _ := strings.Cut(name, "|") // config|resetstat, client|setinfo
		switch cmd {
		case "info", "config", "hello", "client", "ping", "select", "auth":
			continue
		}
		var n, us float64
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				n, _ = strconv.ParseFloat(v, 64)
			case "usec":
				us, _ = strconv.ParseFloat(v, 64)
			}
		}
		calls += int64(n)
		all += us
		switch cmd {
		case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro", "exec":
			outer += us
			sawOuter = true
		}
	}
	if sawOuter {
		return outer, calls
	}
	return all, calls
}

// redisClient returns a client of the Redis at addr, emptied first (FLUSHALL; function
// libraries stay, as they would on a production server).
func redisClient(b *testing.B, addr string) *redis.Client {
	// ContextTimeoutEnabled, as docs/distributed.md recommends: the store's per-call
	// timeout then bounds the socket itself, with no guard goroutine per call. It changes
	// nothing for the peers, whose calls carry no deadline.
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: redisGoroutines, ContextTimeoutEnabled: true})
	b.Cleanup(func() { _ = c.Close() })
	ctx := context.Background()
	if err := c.FlushAll(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	// Open the pool's connections before the timer starts: their buffers (tens of KB
	// each) would otherwise count in B/op and allocs/op of a short run, which are meant
	// to be what one call costs the client. Each Conn holds a connection of its own.
	conns := make([]*redis.Conn, redisGoroutines)
	for i := range conns {
		conns[i] = c.Conn()
		if err := conns[i].Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
	}
	for _, cn := range conns {
		_ = cn.Close() // back to the pool, idle
	}
	return c
}

// BenchmarkRedis: 64 goroutines, 10k keys, one go-redis client per contender. The
// windowed algorithms count redisBurst permits per second, as ulule-redis does (its fixed
// window of one second starts at a key's first hit, ours at the epoch's seconds).
func BenchmarkRedis(b *testing.B) {
	addr := redisServer(b) // one server for the sub-benchmarks, each of which empties it
	for _, a := range []algo.Algorithm{
		algo.TokenBucket{Rate: redisRate, Burst: redisBurst},
		algo.GCRA{Rate: redisRate, Burst: redisBurst},
		algo.SlidingWindowLog{Limit: redisBurst, Window: time.Second},
		algo.FixedWindow{Limit: redisBurst, Window: time.Second},
		algo.SlidingWindowCounter{Limit: redisBurst, Window: time.Second},
	} {
		b.Run("ratekit-"+a.Name(), func(b *testing.B) {
			c := redisClient(b, addr)
			s, err := distributed.New(c, distributed.WithPrefix("bench:")) // batching: the default
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			l, err := limiter.New(s, a)
			if err != nil {
				b.Fatal(err)
			}
			runRedis(b, c, func(ctx context.Context, key string) error {
				_, err := l.Allow(ctx, key)
				return err
			})
		})
	}
	// Charge (issue 36) on the default store: the token bucket's script with the operation
	// "charge", one round trip as Allow's; it must cost no more than the Allow row above.
	b.Run("ratekit-token-bucket-charge", func(b *testing.B) {
		c := redisClient(b, addr)
		s, err := distributed.New(c, distributed.WithPrefix("bench:"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		l, err := limiter.New(s, algo.TokenBucket{Rate: redisRate, Burst: redisBurst})
		if err != nil {
			b.Fatal(err)
		}
		runRedis(b, c, func(ctx context.Context, key string) error {
			_, err := l.Charge(ctx, key, 1)
			return err
		})
	})
	// The token bucket, the fixed window and the sliding counter again without batching
	// (Batching{Off: true}): each call takes a round trip of its own, as every peer's does,
	// where the default store above lets the concurrent calls of the 64 goroutines share
	// pipelines. Same keys and limits as the rows above.
	for _, a := range []algo.Algorithm{
		algo.TokenBucket{Rate: redisRate, Burst: redisBurst},
		algo.FixedWindow{Limit: redisBurst, Window: time.Second},
		algo.SlidingWindowCounter{Limit: redisBurst, Window: time.Second},
	} {
		b.Run("ratekit-"+a.Name()+"-unbatched", func(b *testing.B) {
			c := redisClient(b, addr)
			s, err := distributed.New(c, distributed.WithPrefix("bench:"),
				distributed.WithBatching(distributed.Batching{Off: true}))
			if err != nil {
				b.Fatal(err)
			}
			l, err := limiter.New(s, a)
			if err != nil {
				b.Fatal(err)
			}
			runRedis(b, c, func(ctx context.Context, key string) error {
				_, err := l.Allow(ctx, key)
				return err
			})
		})
	}
	b.Run("redis_rate-gcra", func(b *testing.B) {
		c := redisClient(b, addr)
		l := redis_rate.NewLimiter(c)
		lim := redis_rate.Limit{Rate: redisRate, Burst: redisBurst, Period: time.Second}
		runRedis(b, c, func(ctx context.Context, key string) error {
			_, err := l.Allow(ctx, key, lim)
			return err
		})
	})
	b.Run("ulule-redis", func(b *testing.B) {
		c := redisClient(b, addr)
		st, err := ulredis.NewStoreWithOptions(c, ulule.StoreOptions{Prefix: "ulule"})
		if err != nil {
			b.Fatal(err)
		}
		l := ulule.New(st, ulule.Rate{Period: time.Second, Limit: redisBurst})
		runRedis(b, c, func(ctx context.Context, key string) error {
			_, err := l.Get(ctx, key)
			return err
		})
	})
	b.Run("redis-benchmark-evalsha-ceiling", func(b *testing.B) { benchCeiling(b, addr, false) })
	b.Run("redis-benchmark-fcall-ceiling", func(b *testing.B) { benchCeiling(b, addr, true) })
}

// benchCeiling runs redis-benchmark -c 64 -n 200000 -r 10000 with the EVALSHA of our
// token-bucket script (or, with fcall, the FCALL of its function), as
// distributed/testdata/bench-evalsha.sh does: the one-round-trip ceiling with no Go client
// in the way. It runs once whatever b.N is and reports redis-benchmark's requests per
// second (and ns/op as its inverse), and the server's time per call.
func benchCeiling(b *testing.B, addr string, fcall bool) {
	c := redisClient(b, addr)
	if _, err := exec.LookPath("redis-benchmark"); err != nil {
		b.Skip("no redis-benchmark")
	}
	ctx := context.Background()
	def := algo.TokenBucket{Rate: redisRate, Burst: redisBurst}.Script()
	cmd := []string{"EVALSHA"}
	if fcall {
		// The library the store builds from the script (distributed's newEntry).
		fn, _, _, lib := luawire.RateLibrary(def.Source, len(def.Keys))
		if err := c.FunctionLoadReplace(ctx, lib).Err(); err != nil {
			b.Fatal(err)
		}
		cmd = []string{"FCALL", fn}
	} else {
		sha, err := c.ScriptLoad(ctx, def.Source).Result()
		if err != nil {
			b.Fatal(err)
		}
		cmd = append(cmd, sha)
	}
	host, port := splitAddr(addr)
	m := meterServer(b, c)
	args := append([]string{"-h", host, "-p", port,
		"-c", strconv.Itoa(redisGoroutines), "-n", strconv.Itoa(ceilingRequests), "-r", strconv.Itoa(redisKeys),
		"--csv"}, cmd...)
	args = append(args, "1", "bench:{user:__rand_int__}:tb", "apply", "", "1", "0",
		strconv.Itoa(redisRate), strconv.Itoa(redisBurst))
	out, err := exec.Command("redis-benchmark", args...).CombinedOutput()
	if err != nil {
		b.Fatalf("redis-benchmark: %v\n%s", err, out)
	}
	rps, err := parseCSVRate(string(out))
	if err != nil {
		b.Fatalf("%v in:\n%s", err, out)
	}
	b.ReportMetric(rps, "decisions/s")
	b.ReportMetric(1e9/rps, "ns/op")
	m.report(b, ceilingRequests)
}

// parseCSVRate reads the requests per second of redis-benchmark --csv: a header line then
// `"EVALSHA ...","12345.67",...`.
func parseCSVRate(out string) (float64, error) {
	lines := strings.Split(strings.TrimSpace(strings.ReplaceAll(out, "\r", "\n")), "\n")
	last := lines[len(lines)-1]
	fields := strings.Split(last, "\",\"")
	if len(fields) < 2 {
		return 0, fmt.Errorf("no rate in %q", last)
	}
	return strconv.ParseFloat(strings.Trim(fields[1], "\""), 64)
}

func splitAddr(addr string) (host, port string) {
	i := strings.LastIndexByte(addr, ':')
	return addr[:i], addr[i+1:]
}
