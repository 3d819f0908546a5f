package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
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

// runRedis runs call from 64 goroutines over the 10k keys and reports decisions/s, and the
// Redis server's own time per decision (serverStats).
func runRedis(b *testing.B, c *redis.Client, call func(ctx context.Context, key string) error) {
	done := serverStats(b, c)
	benchtest.Decisions(b, redisGoroutines, redisKeyList, call)
	done(b.N)
}

// serverStats resets the server's INFO commandstats and returns the function that, after
// the run of n decisions, reports server-cpu-µs/op, the CPU time (user + system, INFO cpu)
// the server spent per decision, its network work included, and script-µs/call, the
// usec_per_call of the script command (EVALSHA or FCALL; the commands a script runs are
// counted inside it) in INFO commandstats.
func serverStats(b *testing.B, c *redis.Client) func(n int) {
	ctx := context.Background()
	if err := c.ConfigResetStat(ctx).Err(); err != nil {
		b.Fatal(err)
	}
	cpu0 := serverCPU(b, c)
	return func(n int) {
		cpu := serverCPU(b, c) - cpu0
		info, err := c.Info(ctx, "commandstats").Result()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(cpu*1e6/float64(n), "server-cpu-µs/op")
		b.ReportMetric(scriptMicros(info), "script-µs/call")
	}
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

// scriptMicros reads INFO commandstats: the usec_per_call of the busiest of evalsha, eval
// and fcall (0 if none ran). A line looks like
// cmdstat_evalsha:calls=5,usec=40,usec_per_call=8.00,rejected_calls=0,failed_calls=0.
func scriptMicros(info string) float64 {
	var calls, usec float64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_evalsha" && name != "cmdstat_eval" && name != "cmdstat_fcall") {
			continue
		}
		f := map[string]float64{}
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			f[k], _ = strconv.ParseFloat(v, 64)
		}
		if f["calls"] > calls {
			calls, usec = f["calls"], f["usec_per_call"]
		}
	}
	return usec
}

// redisClient returns a client of the Redis at addr, emptied first (FLUSHALL; function
// libraries stay, as they would on a production server).
func redisClient(b *testing.B, addr string) *redis.Client {
	// ContextTimeoutEnabled, as docs/distributed.md recommends: the store's per-call
	// timeout then bounds the socket itself, with no guard goroutine per call. It changes
	// nothing for the peers, whose calls carry no deadline.
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: redisGoroutines, ContextTimeoutEnabled: true})
	b.Cleanup(func() { _ = c.Close() })
	if err := c.FlushAll(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkRedis: 64 goroutines, 10k keys, one go-redis client per contender.
func BenchmarkRedis(b *testing.B) {
	addr := redisServer(b) // one server for the sub-benchmarks, each of which empties it
	for _, a := range []algo.Algorithm{
		algo.TokenBucket{Rate: redisRate, Burst: redisBurst},
		algo.GCRA{Rate: redisRate, Burst: redisBurst},
		algo.SlidingWindowLog{Limit: redisBurst, Window: time.Second},
	} {
		b.Run("ratekit-"+a.Name(), func(b *testing.B) {
			c := redisClient(b, addr)
			s, err := distributed.New(c, distributed.WithPrefix("bench:"))
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
	// The token bucket again with WithBatching (its defaults): the concurrent calls of the
	// 64 goroutines share pipelines instead of taking a round trip each.
	b.Run("ratekit-token-bucket-batched", func(b *testing.B) {
		c := redisClient(b, addr)
		s, err := distributed.New(c, distributed.WithPrefix("bench:"),
			distributed.WithBatching(distributed.Batching{}))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		l, err := limiter.New(s, algo.TokenBucket{Rate: redisRate, Burst: redisBurst})
		if err != nil {
			b.Fatal(err)
		}
		runRedis(b, c, func(ctx context.Context, key string) error {
			_, err := l.Allow(ctx, key)
			return err
		})
	})
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
		if err := c.FunctionLoadReplace(ctx, def.Library).Err(); err != nil {
			b.Fatal(err)
		}
		cmd = []string{"FCALL", def.Function}
	} else {
		sha, err := c.ScriptLoad(ctx, def.Source).Result()
		if err != nil {
			b.Fatal(err)
		}
		cmd = append(cmd, sha)
	}
	host, port := splitAddr(addr)
	done := serverStats(b, c)
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
	done(ceilingRequests)
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
