package grpclimit_test

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/grpclimit"
)

// checkHeader calls Health.Check and returns its error and the header metadata the
// server sent, which a denied call carries too.
func checkHeader(t *testing.T, c healthpb.HealthClient) (metadata.MD, error) {
	t.Helper()
	var md metadata.MD
	_, err := c.Check(t.Context(), &healthpb.HealthCheckRequest{}, grpc.Header(&md))
	return md, err
}

func wantMD(t *testing.T, label string, md metadata.MD, policy, rateLimit []string) {
	t.Helper()
	if got := md.Get("ratelimit-policy"); !slices.Equal(got, policy) {
		t.Errorf("%s: ratelimit-policy = %q, want %q", label, got, policy)
	}
	if got := md.Get("ratelimit"); !slices.Equal(got, rateLimit) {
		t.Errorf("%s: ratelimit = %q, want %q", label, got, rateLimit)
	}
}

func TestMetadata(t *testing.T) {
	t.Parallel()
	l, _, _ := newLimiter(t, algo.FixedWindow{Limit: 2, Window: time.Minute})
	s := startServer(t, newInterceptors(t, l), true)
	c := s.dial(t, "192.0.2.1:1000")
	policy := []string{`"default";q=2;w=60`}

	md, err := checkHeader(t, c)
	want(t, "call 1", err, ok)
	wantMD(t, "call 1", md, policy, []string{`"default";r=1;t=60`})
	checkHeader(t, c)
	md, err = checkHeader(t, c)
	want(t, "call 3", err, outcome{codes.ResourceExhausted, time.Minute})
	wantMD(t, "call 3 (denied)", md, policy, []string{`"default";r=0;t=60`})

	// A stream's header carries them too.
	l2, _, _ := newLimiter(t, algo.FixedWindow{Limit: 5, Window: time.Minute})
	c2 := startServer(t, newInterceptors(t, l2), true).dial(t, "192.0.2.1:1000")
	stream, err := c2.Watch(t.Context(), &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	md, err = stream.Header()
	if err != nil {
		t.Fatal(err)
	}
	wantMD(t, "watch", md, []string{`"default";q=5;w=60`}, []string{`"default";r=4;t=60`})

	// WithoutMetadata: none.
	c3 := startServer(t, newInterceptors(t, l2, grpclimit.WithoutMetadata()), true).dial(t, "192.0.2.1:1000")
	md, err = checkHeader(t, c3)
	want(t, "without metadata", err, ok)
	wantMD(t, "without metadata", md, nil, nil)
}

func TestMetadataComposite(t *testing.T) {
	t.Parallel()
	clk := clockx.NewFake(epoch)
	st := newStore(t, clk)
	sec, err := limiter.New(st, algo.TokenBucket{Rate: 2, Burst: 2})
	if err != nil {
		t.Fatal(err)
	}
	day, err := limiter.New(st, algo.Named(algo.FixedWindow{Limit: 1000, Window: 24 * time.Hour}, "daily"))
	if err != nil {
		t.Fatal(err)
	}
	all, err := limiter.All(sec, day)
	if err != nil {
		t.Fatal(err)
	}
	c := startServer(t, newInterceptors(t, all), true).dial(t, "192.0.2.1:1000")
	policy := []string{`"tb-2-1s";q=2;w=1`, `"daily";q=1000;w=86400`}
	md, err := checkHeader(t, c)
	want(t, "call 1", err, ok)
	wantMD(t, "call 1", md, policy, []string{`"tb-2-1s";r=1;t=1`, `"daily";r=999;t=86400`})
	checkHeader(t, c)
	md, err = checkHeader(t, c)
	want(t, "call 3", err, outcome{codes.ResourceExhausted, 500 * time.Millisecond})
	// The daily window would have granted: within the retry delay at most 998 are left.
	wantMD(t, "call 3 (denied)", md, policy, []string{`"tb-2-1s";r=0;t=1`, `"daily";r=998;t=1`})
}
