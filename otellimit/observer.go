package otellimit

import (
	"context"
	"fmt"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/ratekit/limiter"
	"github.com/ratekit/limiter/algo"
)

// ScopeName is the instrumentation scope of the meter the Observer records with.
const ScopeName = "github.com/ratekit/limiter/otellimit"

// Attribute keys of the metrics.
const (
	// AttrName is the name given to New.
	AttrName = attribute.Key("limiter.name")
	// AttrOutcome is limiter.Outcome's String.
	AttrOutcome = attribute.Key("limiter.outcome")
	// AttrShadow is true for a limiter in shadow mode (limiter.WithShadow).
	AttrShadow = attribute.Key("limiter.shadow")
	// AttrFrom and AttrTo are the states of a breaker transition
	// (limiter.BreakerState's String).
	AttrFrom = attribute.Key("limiter.breaker.from")
	AttrTo   = attribute.Key("limiter.breaker.to")
)

// outcomes is the number of limiter.Outcome values whose attributes New builds in
// advance; an Outcome past them (a newer limiter) is recorded all the same.
const outcomes = int(limiter.OutcomeFallback) + 1

// Observer is a limiter.Observer recording OpenTelemetry metrics for one limiter: give
// each limiter an Observer of its own (its breaker state is one gauge per name). It is
// safe for concurrent use, and records without allocating.
type Observer struct {
	name        string
	decisions   metric.Int64Counter
	latency     metric.Float64Histogram
	transitions metric.Int64Counter
	state       atomic.Int64 // the breaker's state, read by the gauge's callback

	byOutcome [outcomes][2][]metric.AddOption // [outcome][shadow]
	named     []metric.RecordOption
	nameSet   attribute.Set
}

var _ limiter.Observer = (*Observer)(nil)

// Option configures New.
type Option interface {
	apply(*config)
}

type config struct {
	mp metric.MeterProvider
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithMeterProvider sets the MeterProvider the metrics are created with. The default is
// the global one (otel.GetMeterProvider); a nil mp keeps it.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) {
		if mp != nil {
			c.mp = mp
		}
	})
}

// New returns an Observer recording the metrics of the limiter called name (the
// limiter.name attribute), for limiter.WithObserver. It returns an error wrapping
// algo.ErrInvalidConfig, as every constructor of the module does, for an empty name, and
// the meter's error if an instrument cannot be created.
func New(name string, opts ...Option) (*Observer, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: otellimit.New: the limiter name is empty", algo.ErrInvalidConfig)
	}
	c := config{mp: otel.GetMeterProvider()}
	for _, o := range opts {
		if o != nil {
			o.apply(&c)
		}
	}
	m := c.mp.Meter(ScopeName)
	o := &Observer{name: name, nameSet: attribute.NewSet(AttrName.String(name))}
	var err error
	if o.decisions, err = m.Int64Counter("ratekit.limiter.decisions",
		metric.WithDescription("Decisions of the limiter, by outcome."),
		metric.WithUnit("{decision}")); err != nil {
		return nil, err
	}
	if o.latency, err = m.Float64Histogram("ratekit.limiter.store.duration",
		metric.WithDescription("Time the limiter's store took to answer a decision."),
		metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
			0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1)); err != nil {
		return nil, err
	}
	if o.transitions, err = m.Int64Counter("ratekit.limiter.breaker.transitions",
		metric.WithDescription("Changes of the limiter's circuit breaker state."),
		metric.WithUnit("{transition}")); err != nil {
		return nil, err
	}
	// The callback is registered apart, not as an option of the gauge: a second Observer
	// gets the same gauge back from the meter, and only a registered callback of its own
	// reports its name.
	gauge, err := m.Int64ObservableGauge("ratekit.limiter.breaker.state",
		metric.WithDescription("State of the limiter's circuit breaker: 0 closed, 1 open, 2 half-open."))
	if err != nil {
		return nil, err
	}
	if _, err = m.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		obs.ObserveInt64(gauge, o.state.Load(), metric.WithAttributeSet(o.nameSet))
		return nil
	}, gauge); err != nil {
		return nil, err
	}
	for out := range outcomes {
		for sh := range 2 {
			o.byOutcome[out][sh] = []metric.AddOption{metric.WithAttributeSet(o.attrs(limiter.Outcome(out), sh == 1))}
		}
	}
	o.named = []metric.RecordOption{metric.WithAttributeSet(o.nameSet)}
	return o, nil
}

// attrs is the attribute set of a decision.
func (o *Observer) attrs(out limiter.Outcome, shadow bool) attribute.Set {
	return attribute.NewSet(AttrName.String(o.name), AttrOutcome.String(out.String()), AttrShadow.Bool(shadow))
}

// Decided records e: one decision, and the store's latency when it was called.
func (o *Observer) Decided(ctx context.Context, e limiter.Event) {
	sh := 0
	if e.Shadow {
		sh = 1
	}
	if int(e.Outcome) < outcomes {
		o.decisions.Add(ctx, 1, o.byOutcome[e.Outcome][sh]...)
	} else {
		o.decisions.Add(ctx, 1, metric.WithAttributeSet(o.attrs(e.Outcome, e.Shadow)))
	}
	if e.Latency > 0 {
		o.latency.Record(ctx, e.Latency.Seconds(), o.named...)
	}
}

// BreakerChanged records a change of the breaker's state.
func (o *Observer) BreakerChanged(from, to limiter.BreakerState) {
	o.state.Store(int64(to))
	o.transitions.Add(context.Background(), 1, metric.WithAttributes(
		AttrName.String(o.name), AttrFrom.String(from.String()), AttrTo.String(to.String())))
}
