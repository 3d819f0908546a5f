package bench

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"runtime"
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
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/rls/server"
	"github.com/ratekit/limiter/store"
)

// rlsConfig limits each of 1000 users to far more than a benchmark sends, so every call is
// a full decision (a counter read and written), as envoyproxy/ratelimit's INCRBY + EXPIRE.
const rlsConfig = "domain: bench\ndescriptors:\n  - key: user\n    rate_limit: {unit: hour, requests_per_unit: 1000000000}\n"

// BenchmarkRatekitdGRPC is ratekitd's service (rls/server) behind a real gRPC server and
// client on loopback TCP, one descriptor per call from 16 × GOMAXPROCS callers: the
// decisions/s and p50/p99 latency an Envoy fleet would see, in memory and on Redis. On Redis it
// also reports what the server spent per decision (meterServer), the Redis commands among
// it (cmds/op; envoyproxy/ratelimit: INCRBY + EXPIRE, 2).
func BenchmarkRatekitdGRPC(b *testing.B) {
	b.Run("ratekit-memory", func(b *testing.B) {
		st, err := local.New()
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		benchRLS(b, st, nil)
	})
	b.Run("ratekit-redis", func(b *testing.B) {
		// A loaded machine can hold a call past the default 200 ms; this measures
		// throughput, not the failure policy.
		c := redisClient(b, redisServer(b))
		st, err := distributed.New(c, distributed.WithPrefix("bench:"), distributed.WithTimeout(5*time.Second))
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		benchRLS(b, st, c)
	})
}

// benchRLS measures the service on st; rc, the client of st's Redis (nil in memory), adds
// what the server spent per decision (meterServer).
func benchRLS(b *testing.B, st store.Store, rc *redis.Client) {
	path := filepath.Join(b.TempDir(), "bench.yaml")
	if err := os.WriteFile(path, []byte(rlsConfig), 0o600); err != nil {
		b.Fatal(err)
	}
	cfg, err := server.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	svc, err := server.New(cfg, st, server.Options{Concurrent: rc != nil})
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
		entry := &ratelimitv3.RateLimitDescriptor_Entry{Key: "user", Value: strconv.Itoa(i)}
		reqs[i] = &rlsv3.RateLimitRequest{Domain: "bench", Descriptors: []*ratelimitv3.RateLimitDescriptor{{Entries: []*ratelimitv3.RateLimitDescriptor_Entry{entry}}}}
	}
	var (
		mu  sync.Mutex
		lat []time.Duration
	)
	var meter *serverMeter
	if rc != nil {
		meter = meterServer(b, rc)
	}
	b.SetParallelism(16) // a gateway fleet keeps many calls in flight
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		mine := make([]time.Duration, 0, 1024)
		for i := 0; pb.Next(); i += 7 {
			t0 := time.Now()
			r, err := client.ShouldRateLimit(context.Background(), reqs[i%len(reqs)])
			mine = append(mine, time.Since(t0))
			if err != nil || r.OverallCode != rlsv3.RateLimitResponse_OK {
				b.Errorf("call: %v %v", r, err)
				return
			}
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start)
	b.StopTimer()
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "decisions/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	if meter != nil {
		meter.report(b, b.N)
	}
}

// BenchmarkRatekitdService is ratekitd's service (rls/server) called directly, without
// gRPC: `decide` is what one decision costs the service itself (the gRPC row adds the
// transport, client and server, to it), `memory` the live heap per distinct descriptor
// value in memory, measured as BenchmarkLocalMemory measures the store (the same 1M keys
// and store options; the descriptor values are allocated beforehand and not counted, the
// limiter key ratekitd builds from them is).
func BenchmarkRatekitdService(b *testing.B) {
	ctx := context.Background()
	newService := func(b *testing.B, st store.Store, config string) *server.Service {
		path := filepath.Join(b.TempDir(), "bench.yaml")
		if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
			b.Fatal(err)
		}
		cfg, err := server.Load(path)
		if err != nil {
			b.Fatal(err)
		}
		svc, err := server.New(cfg, st, server.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return svc
	}
	// request returns a one-entry request and the entry whose value each call sets.
	request := func() (*rlsv3.RateLimitRequest, *ratelimitv3.RateLimitDescriptor_Entry) {
		entry := &ratelimitv3.RateLimitDescriptor_Entry{Key: "user"}
		return &rlsv3.RateLimitRequest{Domain: "bench", Descriptors: []*ratelimitv3.RateLimitDescriptor{{Entries: []*ratelimitv3.RateLimitDescriptor_Entry{entry}}}}, entry
	}
	b.Run("decide", func(b *testing.B) {
		st, err := local.New()
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		svc := newService(b, st, rlsConfig)
		vals := make([]string, 1000)
		for i := range vals {
			vals[i] = strconv.Itoa(i)
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			req, entry := request()
			for i := 0; pb.Next(); i += 7 {
				entry.Value = vals[i%len(vals)]
				r, err := svc.ShouldRateLimit(ctx, req)
				if err != nil || r.OverallCode != rlsv3.RateLimitResponse_OK {
					b.Errorf("call: %v %v", r, err)
					return
				}
			}
		})
	})
	// memory: the bench's rule; memory-detailed: the same with detailed_metric, whose
	// statistics name each value, so that every key adds a metric series as well.
	for _, m := range []struct{ name, config string }{
		{"memory", rlsConfig},
		{"memory-detailed", strings.Replace(rlsConfig, "    rate_limit:", "    detailed_metric: true\n    rate_limit:", 1)},
	} {
		b.Run(m.name, func(b *testing.B) {
			const n = 1_000_000
			vals := make([]string, n)
			for i := range vals {
				vals[i] = strconv.Itoa(i)
			}
			req, entry := request()
			b.ReportAllocs()
			var perKey float64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				before := settledHeap()
				b.StartTimer()
				st, _ := local.New(local.WithSweepInterval(0)) // valid options: no error
				svc := newService(b, st, m.config)
				for _, v := range vals {
					entry.Value = v
					if _, err := svc.ShouldRateLimit(ctx, req); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				perKey = (float64(settledHeap()) - float64(before)) / n
				runtime.KeepAlive(svc)
				_ = st.Close()
				b.StartTimer()
			}
			b.ReportMetric(perKey, "bytes/key")
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/insert")
		})
	}
}
