package server

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/store"
)

// benchConfig limits each of 1000 users to far more than a benchmark sends, so that every
// call is a full decision (a counter read and written), as envoyproxy/ratelimit's
// INCRBY + EXPIRE is.
const benchConfig = "domain: bench\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 1000000000}\n"

// BenchmarkShouldRateLimit measures ShouldRateLimit through a real gRPC client and server
// on loopback TCP, one descriptor per call, from 32 concurrent callers: decisions/s and
// the p50/p99 latency a caller sees, in memory and on Redis (with the Redis commands each
// decision costs, from INFO commandstats).
func BenchmarkShouldRateLimit(b *testing.B) {
	b.Run("memory", func(b *testing.B) {
		st, err := local.New()
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		benchServe(b, st, false, nil)
	})
	b.Run("redis", func(b *testing.B) {
		addr := redistest.Start(b).Addr()
		c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true, PoolSize: 64})
		defer c.Close()
		// A loaded machine (this one is shared) can hold a call past the default 200 ms;
		// the benchmark measures throughput, not the failure policy.
		st := redisStore(b, addr, distributed.WithTimeout(5*time.Second))
		benchServe(b, st, true, c)
	})
}

func benchServe(b *testing.B, st store.Store, concurrent bool, rc *redis.Client) {
	dir := b.TempDir()
	writeFile(b, dir, "c.yaml", benchConfig)
	cfg, err := Load(dir)
	if err != nil {
		b.Fatal(err)
	}
	svc, err := New(cfg, st, Options{Concurrent: concurrent})
	if err != nil {
		b.Fatal(err)
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	gs := grpc.NewServer()
	rlsv3.RegisterRateLimitServiceServer(gs, svc)
	go gs.Serve(lis)
	defer gs.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	client := rlsv3.NewRateLimitServiceClient(conn)
	reqs := make([]*rlsv3.RateLimitRequest, 1000)
	for i := range reqs {
		reqs[i] = &rlsv3.RateLimitRequest{Domain: "bench", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("user", strconv.Itoa(i))}}
	}
	before := redisCalls(b, rc)
	var mu sync.Mutex
	var lat []time.Duration
	b.SetParallelism(16) // 16 × GOMAXPROCS callers: a gateway fleet keeps many calls in flight
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		mine := make([]time.Duration, 0, 1024)
		i := 0
		for pb.Next() {
			t0 := time.Now()
			r, err := client.ShouldRateLimit(context.Background(), reqs[i%len(reqs)])
			mine = append(mine, time.Since(t0))
			if err != nil || r.OverallCode != rlsv3.RateLimitResponse_OK {
				b.Errorf("call: %v %v", r, err)
				return
			}
			i += 7
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "decisions/s")
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
	if rc != nil {
		b.ReportMetric(float64(redisCalls(b, rc)-before)/float64(b.N), "redis-cmds/decision")
		if testing.Verbose() {
			info, _ := rc.Info(context.Background(), "commandstats").Result()
			b.Logf("INFO commandstats after %d decisions:\n%s", b.N, info)
		}
	}
}

// redisCalls is the number of commands Redis has run, but INFO itself, from INFO
// commandstats (cmdstat_x:calls=N,...).
func redisCalls(b *testing.B, rc *redis.Client) int64 {
	if rc == nil {
		return 0
	}
	info, err := rc.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	var n int64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok || name == "cmdstat_info" {
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		v, _ := strconv.ParseInt(calls, 10, 64)
		n += v
	}
	return n
}
