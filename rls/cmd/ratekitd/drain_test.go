package main

import (
	"context"
	"net/http"
	"testing"

	ratelimitv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	rlsv3 "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/store"
)

// gateStore holds every Apply until release is closed, telling entered first.
type gateStore struct {
	store.Store
	entered chan struct{}
	release chan struct{}
}

func (g *gateStore) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	g.entered <- struct{}{}
	<-g.release
	return g.Store.Apply(ctx, key, a, req)
}

// TestSIGTERMDrainsCallsInFlight stops ratekitd while a call is inside the store: the
// health check fails at once, the call still gets its answer, and run returns cleanly.
func TestSIGTERMDrainsCallsInFlight(t *testing.T) {
	t.Parallel()
	gate := &gateStore{entered: make(chan struct{}, 1), release: make(chan struct{})}
	draining := make(chan struct{})
	in := startWith(t, hooks{
		wrapStore: func(s store.Store) store.Store { gate.Store = s; return gate },
		draining:  func() { close(draining) },
	}, "--config", "../../examples", "--drain-timeout", "10m")

	type result struct {
		r   *rlsv3.RateLimitResponse
		err error
	}
	res := make(chan result, 1)
	go func() {
		r, err := in.client.ShouldRateLimit(context.Background(), &rlsv3.RateLimitRequest{Domain: "edge",
			Descriptors: []*ratelimitv3.RateLimitDescriptor{{Entries: []*ratelimitv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: "10.0.0.1"}}}}})
		res <- result{r, err}
	}()
	<-gate.entered // the call is in flight, inside the store
	in.stop()      // what SIGTERM does
	<-draining
	resp, err := http.Get("http://" + in.httpAddr + "/healthcheck")
	if err != nil {
		t.Fatalf("healthcheck while draining: %v (want 500 from a server still up)", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Fatalf("healthcheck while draining: %d, want 500", resp.StatusCode)
	}
	close(gate.release)
	got := <-res
	if got.err != nil || got.r.OverallCode != rlsv3.RateLimitResponse_OK || got.r.Statuses[0].LimitRemaining != 9 {
		t.Fatalf("call in flight during the drain: %v, %v; want its answer", got.r, got.err)
	}
	if err := <-in.done; err != nil {
		t.Fatalf("run: %v", err)
	}
	in.done <- nil // for the cleanup
}
