package otellimit_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/clockx"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/otellimit"
	"github.com/ratekit/limiter/store"
)

var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// switchable is a local store that fails like an unreachable Redis while down is set.
type switchable struct {
	*local.Store
	down atomic.Bool
}

func (s *switchable) Apply(ctx context.Context, key string, a algo.Algorithm, req algo.Request) (algo.Decision, error) {
	if s.down.Load() {
		return algo.Decision{}, fmt.Errorf("connection refused: %w", store.ErrUnavailable)
	}
	return s.Store.Apply(ctx, key, a, req)
}

// collect returns the metrics read, as "metric{attributes} value" lines, sorted; the
// histogram as its sample count.
func collect(t *testing.T, r *sdkmetric.ManualReader) []string {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var lines []string
	enc := attribute.DefaultEncoder()
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != otellimit.ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, otellimit.ScopeName)
		}
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s{%s} %d", m.Name, p.Attributes.Encoded(enc), p.Value))
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s{%s} %d", m.Name, p.Attributes.Encoded(enc), p.Value))
				}
			case metricdata.Histogram[float64]:
				if m.Unit != "s" {
					t.Errorf("%s: unit %q, want s", m.Name, m.Unit)
				}
				for _, p := range d.DataPoints {
					lines = append(lines, fmt.Sprintf("%s{%s} count=%d positive=%v", m.Name, p.Attributes.Encoded(enc), p.Count, p.Sum > 0))
				}
			default:
				t.Errorf("%s: unexpected data %T", m.Name, m.Data)
			}
		}
	}
	sort.Strings(lines)
	return lines
}

func TestObserverMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	clk := clockx.NewFake(start)
	ls, err := local.New(local.WithClock(clk), local.WithSweepInterval(0))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ls.Close() })
	st := &switchable{Store: ls}

	obs, err := otellimit.New("api", otellimit.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	l, err := limiter.New(st, algo.TokenBucket{Rate: 1, Burst: 2}, limiter.WithClock(clk), limiter.WithObserver(obs),
		limiter.WithFailurePolicy(limiter.FailOpen),
		limiter.WithCircuitBreaker(limiter.CircuitBreaker{MinCalls: 1, Window: time.Nanosecond, CoolDown: time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	shadowObs, err := otellimit.New("trial", otellimit.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	trial, err := limiter.New(ls, algo.FixedWindow{Limit: 1, Window: time.Minute}, limiter.WithClock(clk),
		limiter.WithObserver(shadowObs), limiter.WithShadow())
	if err != nil {
		t.Fatal(err)
	}

	for range 3 { // allowed, allowed, denied
		_, _ = l.Allow(ctx, "k")
	}
	for range 2 { // allowed, denied (but let through)
		_, _ = trial.Allow(ctx, "k")
	}
	st.down.Store(true)
	_, _ = l.Allow(ctx, "k") // fails open
	clk.Add(time.Nanosecond)
	_, _ = l.Allow(ctx, "k") // opens the breaker at the window's end, skipped: no latency sample
	want := []string{
		`ratekit.limiter.breaker.state{limiter.name=api} 1`,
		`ratekit.limiter.breaker.state{limiter.name=trial} 0`,
		`ratekit.limiter.breaker.transitions{limiter.breaker.from=closed,limiter.breaker.to=open,limiter.name=api} 1`,
		`ratekit.limiter.decisions{limiter.name=api,limiter.outcome=allowed,limiter.shadow=false} 2`,
		`ratekit.limiter.decisions{limiter.name=api,limiter.outcome=denied,limiter.shadow=false} 1`,
		`ratekit.limiter.decisions{limiter.name=api,limiter.outcome=fail_open,limiter.shadow=false} 2`,
		`ratekit.limiter.decisions{limiter.name=trial,limiter.outcome=allowed,limiter.shadow=true} 1`,
		`ratekit.limiter.decisions{limiter.name=trial,limiter.outcome=denied,limiter.shadow=true} 1`,
		`ratekit.limiter.store.duration{limiter.name=api} count=4 positive=true`,
		`ratekit.limiter.store.duration{limiter.name=trial} count=2 positive=true`,
	}
	if got := collect(t, reader); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// The cool-down passes and the store is back: half-open, then closed.
	clk.Add(time.Second)
	st.down.Store(false)
	_, _ = l.Allow(ctx, "k")
	got := strings.Join(collect(t, reader), "\n")
	for _, w := range []string{
		`ratekit.limiter.breaker.state{limiter.name=api} 0`,
		`ratekit.limiter.breaker.transitions{limiter.breaker.from=open,limiter.breaker.to=half_open,limiter.name=api} 1`,
		`ratekit.limiter.breaker.transitions{limiter.breaker.from=half_open,limiter.breaker.to=closed,limiter.name=api} 1`,
	} {
		if !strings.Contains(got, w) {
			t.Errorf("missing %s in:\n%s", w, got)
		}
	}
}

func TestNewRejectsEmptyName(t *testing.T) {
	t.Parallel()
	if o, err := otellimit.New(""); o != nil || !errors.Is(err, algo.ErrInvalidConfig) {
		t.Fatalf("New(\"\") = %v, %v; want nil and an error wrapping algo.ErrInvalidConfig", o, err)
	}
}

// TestDecidedDoesNotAllocate: recording a decision allocates nothing in the SDK's
// steady state.
func TestDecidedDoesNotAllocate(t *testing.T) {
	ctx := context.Background()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
	t.Cleanup(func() { _ = mp.Shutdown(ctx) })
	obs, err := otellimit.New("api", otellimit.WithMeterProvider(mp))
	if err != nil {
		t.Fatal(err)
	}
	e := limiter.Event{Key: "k", N: 1, Outcome: limiter.OutcomeDenied, Latency: time.Millisecond}
	obs.Decided(ctx, e)
	if got := testing.AllocsPerRun(1000, func() { obs.Decided(ctx, e) }); got != 0 {
		t.Errorf("Decided allocates %v times per call, want 0", got)
	}
}
