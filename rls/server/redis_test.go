package server

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/distributed"
	"github.com/ratekit/limiter/internal/redistest"
	"github.com/ratekit/limiter/local"
)

// redisStore is a distributed store on its own client, as each ratekitd process has.
func redisStore(tb testing.TB, addr string, opts ...distributed.Option) *distributed.Store {
	tb.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, ContextTimeoutEnabled: true})
	st, err := distributed.New(c, append([]distributed.Option{distributed.WithPrefix("ratekitd-test:")}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close(); c.Close() })
	return st
}

// TestTwoInstancesOnOneRedisEnforceOneLimit runs two services, each with its own Redis
// client and gRPC server, against one Redis, and sends them requests for one descriptor
// at once: together they allow exactly the limit. The rule is a sliding log, which has no
// window boundary that a slow run could cross.
func TestTwoInstancesOnOneRedisEnforceOneLimit(t *testing.T) {
	t.Parallel()
	addr := redistest.Start(t).Addr()
	cfg := "domain: d\ndescriptors:\n  - key: user\n    rate_limit: {rate: 25/hour, algorithm: sliding-window-log}\n  - key: tenant\n    rate_limit: {unit: hour, requests_per_unit: 1000}\n"
	a := startOn(t, cfg, redisStore(t, addr), Options{Concurrent: true})
	b := startOn(t, cfg, redisStore(t, addr, distributed.WithDenialCache(distributed.DenialCache{})), Options{Concurrent: true})
	var oks, overs atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		ts := a
		if i%2 == 1 {
			ts = b
		}
		wg.Go(func() {
			for range 10 {
				r, err := ts.client.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "d",
					Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("user", "u1"), desc("tenant", "t1")}})
				switch {
				case err != nil:
					t.Error(err)
					return
				case r.OverallCode == ok:
					oks.Add(1)
				default:
					overs.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if oks.Load() != 25 || overs.Load() != 55 {
		t.Fatalf("allowed %d and refused %d of 80, want 25 and 55", oks.Load(), overs.Load())
	}
	// Each instance sees the other's hits on the tenant: 80 counted, whoever allowed them.
	if r := a.call(t, "d", 0, withHits(desc("tenant", "t1"), 0)); r.Statuses[0].LimitRemaining != 920 {
		t.Fatalf("tenant remaining %d, want 1000-80", r.Statuses[0].LimitRemaining)
	}
}

// TestFailurePolicies points the store at a port nothing listens on.
func TestFailurePolicies(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	cfg := "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: hour, requests_per_unit: 1}\n"
	fallback, err := local.New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fallback.Close() })
	for _, tc := range []struct {
		policy Policy
		want   []rlsv3.RateLimitResponse_Code // answers to two calls
		code   codes.Code
	}{
		{PolicyClosed, []rlsv3.RateLimitResponse_Code{over, over}, codes.OK},
		{PolicyOpen, []rlsv3.RateLimitResponse_Code{ok, ok}, codes.OK},
		{PolicyLocal, []rlsv3.RateLimitResponse_Code{ok, over}, codes.OK},
		{PolicyError, nil, codes.Unavailable},
	} {
		t.Run(string(tc.policy), func(t *testing.T) {
			t.Parallel()
			ts := startOn(t, cfg, redisStore(t, dead, distributed.WithTimeout(time.Second)), Options{FailurePolicy: tc.policy, FallbackStore: fallback, Breaker: limiter.CircuitBreaker{Off: true}})
			for i := range 2 {
				r, err := ts.client.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "d", Descriptors: []*ratelimitv3.RateLimitDescriptor{desc("k", string(tc.policy))}})
				if status.Code(err) != tc.code {
					t.Fatalf("call %d: err %v, want code %v", i+1, err, tc.code)
				}
				if tc.want != nil && r.OverallCode != tc.want[i] {
					t.Fatalf("call %d: %v, want %v", i+1, r.OverallCode, tc.want[i])
				}
			}
		})
	}
	if _, err := New(&Config{}, fallback, Options{FailurePolicy: "sometimes"}); err == nil {
		t.Fatal("unknown policy accepted")
	}
	if _, err := New(&Config{}, fallback, Options{FailurePolicy: PolicyLocal}); err == nil {
		t.Fatal("local policy without a fallback store accepted")
	}
}
