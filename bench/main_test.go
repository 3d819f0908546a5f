package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// peerModules are the peers' modules whose versions the benchmark output names.
var peerModules = []string{
	"golang.org/x/time", "go.uber.org/ratelimit", "github.com/sethvargo/go-limiter",
	"github.com/ulule/limiter/v3", "github.com/go-redis/redis_rate/v10", "github.com/redis/go-redis/v9",
}

// TestMain prints, when benchmarks run, the machine they run on as configuration lines of
// the benchmark format ("key: value", beside go test's goos, goarch and cpu), which
// cmd/chart copies into the table's header.
func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		for _, kv := range machine() {
			fmt.Printf("%s: %s\n", kv[0], kv[1])
		}
	}
	os.Exit(m.Run())
}

// machine returns the configuration lines: date, Go, CPUs, Redis, the load average and the
// peers' versions.
func machine() [][2]string {
	kv := [][2]string{
		{"date", time.Now().UTC().Format("2006-01-02 15:04 MST")},
		{"go", runtime.Version()},
		{"nproc", fmt.Sprint(runtime.NumCPU())},
		{"gomaxprocs", fmt.Sprint(runtime.GOMAXPROCS(0))},
		{"redis", redisVersion()},
	}
	// The load when the run starts: the figures assume a machine otherwise quiet.
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) >= 3 {
			kv = append(kv, [2]string{"loadavg", strings.Join(f[:3], " ") + " (1, 5, 15 min, at the start)"})
		}
	}
	// A test binary carries no module versions (debug.ReadBuildInfo lists no Deps), and go
	// test runs it in the package's directory: the versions are read from go.mod.
	var peers []string
	if mod, err := os.ReadFile("go.mod"); err == nil {
		for _, line := range strings.Split(string(mod), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && slices.Contains(peerModules, f[0]) {
				peers = append(peers, f[0]+" "+f[1])
			}
		}
	}
	if len(peers) > 0 {
		kv = append(kv, [2]string{"peers", strings.Join(peers, ", ")})
	}
	return kv
}

// redisVersion is the version of the Redis the benchmarks use: BENCH_REDIS_ADDR's
// (INFO server), or that of redis-server on the PATH.
func redisVersion() string {
	if addr := os.Getenv(redisAddrEnv); addr != "" {
		c := redis.NewClient(&redis.Options{Addr: addr})
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		info, err := c.Info(ctx, "server").Result()
		if err != nil {
			return "unknown (" + addr + ": " + err.Error() + ")"
		}
		for _, line := range strings.Split(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
				return v + " at " + addr
			}
		}
		return "unknown (" + addr + ")"
	}
	out, err := exec.Command("redis-server", "--version").Output()
	if err != nil {
		return "none (no redis-server on the PATH)"
	}
	// Redis server v=7.0.15 sha=00000000:0 malloc=jemalloc-5.3.0 bits=64 build=...
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "v="); ok {
			return "redis-server " + v + ", on 127.0.0.1"
		}
	}
	return strings.TrimSpace(string(out))
}
