package otellimit_test

import (
	"context"
	"fmt"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
	"github.com/ratekit/limiter/local"
	"github.com/ratekit/limiter/otellimit"
)

// Example counts a limiter's decisions by outcome. A real program passes the
// MeterProvider of its exporter (Prometheus: see docs/observability.md) instead of the
// manual reader used here to print them.
func Example() {
	ctx := context.Background()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(ctx) }()

	obs, err := otellimit.New("login", otellimit.WithMeterProvider(mp))
	if err != nil {
		panic(err)
	}
	st, err := local.New()
	if err != nil {
		panic(err)
	}
	defer func() { _ = st.Close() }()
	l, err := limiter.New(st, algo.FixedWindow{Limit: 2, Window: time.Hour}, limiter.WithObserver(obs))
	if err != nil {
		panic(err)
	}
	for range 3 {
		_, _ = l.Allow(ctx, "alice")
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		panic(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "ratekit.limiter.decisions" {
			for _, p := range sum.DataPoints {
				out, _ := p.Attributes.Value(otellimit.AttrOutcome)
				fmt.Println(out.AsString(), p.Value)
			}
		}
	}
	// Unordered output:
	// allowed 2
	// denied 1
}
